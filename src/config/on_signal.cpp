// HOTSCOPE_ON_SIGNAL, in a file of its own: the heap preload library reads it too, and takes
// from libhotscope.a only the files it calls.
#include "config/config.hpp"

#include <string_view>

namespace hotscope::config {

bool read_on_signal(const Getenv& getenv, std::vector<std::string>& errors) {
  const char* text = getenv("HOTSCOPE_ON_SIGNAL");
  if (text == nullptr || std::string_view(text) == "off") {
    return false;
  }
  if (std::string_view(text) == "report") {
    return true;
  }
  errors.push_back("hotscope: HOTSCOPE_ON_SIGNAL=\"" + std::string(text) +
                   "\" is not report or off; using off");
  return false;
}

} // namespace hotscope::config
