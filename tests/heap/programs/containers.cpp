// Exactness workload 2: standard containers and the C allocation API's edge cases: growing
// vectors, a map of strings, malloc(0), realloc to 0 and to smaller sizes, calloc, the aligned
// functions, strdup and reallocarray; a few blocks leak.
#include <cstdlib>
#include <cstring>
#include <malloc.h>
#include <map>
#include <string>
#include <vector>

namespace {

std::string word(unsigned n) {
  std::string text = "word-";
  for (unsigned i = 0; i < 3 + n % 40; ++i) {
    text += static_cast<char>('a' + (n + i) % 26);
  }
  return text;
}

} // namespace

int main() {
  std::map<std::string, std::vector<int>> index;
  for (unsigned i = 0; i < 2000; ++i) {
    index[word(i % 700)].push_back(static_cast<int>(i));
  }
  std::vector<std::string> words;
  for (const auto& [key, positions] : index) {
    if (positions.size() > 2) {
      words.push_back(key);
    }
  }
  index.clear();

  void* empty = std::malloc(0); // counts as 1 byte
  void* shrunk = std::realloc(std::malloc(4096), 100);
  void* gone = std::realloc(std::malloc(64), 0); // frees the block
  void* fresh = std::realloc(nullptr, 0);        // a malloc(0)
  void* zeroed = std::calloc(100, 8);
  void* aligned = nullptr;
  if (posix_memalign(&aligned, 64, 1000) != 0) {
    return 2;
  }
  void* aligned_c11 = std::aligned_alloc(256, 512);
  void* page = memalign(4096, 10);
  char* copy = strdup("a copied string");
  auto* array = static_cast<int*>(reallocarray(nullptr, 10, sizeof(int)));
  array = static_cast<int*>(reallocarray(array, 1000, sizeof(int)));

  std::free(empty);
  std::free(zeroed);
  std::free(aligned);
  std::free(page);
  std::free(array);
  // Left live: shrunk, fresh, aligned_c11, copy, and the words vector's strings are freed by
  // its destructor after main returns.
  const bool ok = gone == nullptr && shrunk != nullptr && fresh != nullptr &&
                  aligned_c11 != nullptr && copy != nullptr && !words.empty();
  return ok ? 0 : 1;
}
