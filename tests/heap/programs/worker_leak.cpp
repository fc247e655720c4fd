// A service built as services ship, -O2 without -g (tests/heap/CMakeLists.txt): a worker thread
// leaks 100 strings and a vector's storage from svc::render_response, which only the symbol table
// names. Linked with hotscope and measured, so that `hotscope run --heap --out DIR` also writes the
// stats.json `hotscope report` needs.
#include <hotscope/hotscope.hpp>

#include <string>
#include <thread>
#include <vector>

namespace svc {

std::vector<std::string*>* kept = new std::vector<std::string*>; // never freed: the leak

__attribute__((noinline)) void render_response(int request) {
  HOTSCOPE_FUNCTION(); // a stats.json for `hotscope report`
  kept->push_back(new std::string(100 + static_cast<std::size_t>(request), 'x'));
}

} // namespace svc

int main() {
  std::thread worker([] {
    for (int request = 0; request < 100; ++request) {
      svc::render_response(request);
    }
  });
  worker.join();
  return svc::kept->size() == 100 ? 0 : 1;
}
