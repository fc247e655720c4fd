// libhotscope-run.so only: tells the runtime it was preloaded into a program (runtime.cpp).
extern "C" __attribute__((visibility("hidden"))) const bool hotscope_runtime_preloaded = true;
