#pragma once

namespace library {
__attribute__((visibility("default"), noinline)) int twice(int value);
} // namespace library
