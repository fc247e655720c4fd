// A library whose frame lies between a test and its callback (rules_walk_test.cpp): built twice,
// with code of a different size before it, so that the second, loaded where the first was
// unloaded, has other rules at the same return addresses.
#if PADDING
__attribute__((used, noinline)) int walk_callback_padding(volatile int* values, int count) {
  int sum = 0;
  for (int i = 0; i < count; ++i) {
    sum += values[i] * (i + 3) - (sum >> 3);
    __asm__ volatile("" ::: "memory");
  }
  return sum;
}
#endif

// Calls `callback` with a frame of its own kept (the sum after the call): its return address
// is in this library.
__attribute__((noinline)) int walk_callback_calls(int (*callback)(void*), void* data) {
  volatile char room[96];
  room[0] = 1;
  const int result = callback(data);
  __asm__ volatile("" ::: "memory");
  return result + room[0];
}
