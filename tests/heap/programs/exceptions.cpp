// Exactness workload 4: C++ exceptions (each thrown object is allocated by the C++ runtime)
// and iostreams, with smart pointers freed during unwinding.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

namespace {

int check(int value) {
  if (value % 3 == 0) {
    throw std::runtime_error("rejected " + std::to_string(value));
  }
  return value;
}

} // namespace

int main() {
  int sum = 0;
  for (int i = 0; i < 300; ++i) {
    try {
      const auto scratch = std::make_unique<std::string>(static_cast<std::size_t>(20 + i), 'x');
      sum += check(i) + static_cast<int>(scratch->size());
    } catch (const std::exception& error) {
      sum += static_cast<int>(std::string(error.what()).size());
    }
  }
  std::cout << "sum " << sum << std::endl;
  return 0;
}
