// A plug-in the plugin host loads and unloads. Built twice with PLUGIN_TAG "alpha" and "bravo":
// the two libraries have the same layout, so the second one loaded after the first is unloaded
// lands at its address, and their scopes, counters and messages sit at the same addresses.
#include <hotscope/hotscope.hpp>

extern "C" __attribute__((visibility("default"))) void plugin_run(int calls) {
  for (int i = 0; i < calls; ++i) {
    HOTSCOPE_SCOPE(PLUGIN_TAG "_scope");
    HOTSCOPE_COUNTER(PLUGIN_TAG "_counter", i);
    HOTSCOPE_MESSAGE(PLUGIN_TAG " message");
  }
}
