// The sampled mode's three functions of libm (log, expm1, llround), computed here: the preload
// library then needs no libm, which a C program that does not link it would load with it (its
// file mapped, its relocations, its pages faulted in at the first sample), and a program that
// does link it keeps the pages of log and expm1 it never touches. Within 2 ulp of libm's over the
// ranges the sampler and the weights use (tests/heap/sampling_test.cpp).
#pragma once

#include <bit>
#include <cstdint>

namespace hotscope::heap::math {

// ln(x) for a normal x > 0.
inline double natural_log(double x) {
  constexpr double ln2 = 0x1.62e42fefa39efp-1;
  constexpr double sqrt2 = 0x1.6a09e667f3bcdp+0;
  // x = m * 2^e with m in [sqrt(2)/2, sqrt(2)); ln(m) = 2 atanh(s), s = (m - 1) / (m + 1), |s| <
  // 0.172: the series' terms shrink by s^2 < 0.03 each, eleven of them reach double precision.
  const auto bits = std::bit_cast<std::uint64_t>(x);
  int exponent = static_cast<int>((bits >> 52) & 0x7ff) - 1023;
  double m = std::bit_cast<double>((bits & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
  if (m > sqrt2) {
    m *= 0.5;
    ++exponent;
  }
  const double s = (m - 1.0) / (m + 1.0);
  const double s2 = s * s;
  double series = 0.0;
  for (int k = 21; k >= 3; k -= 2) {
    series = (series + 1.0 / k) * s2;
  }
  return exponent * ln2 + 2.0 * s * (1.0 + series);
}

// e^y - 1 for y <= 0, precise for y near 0 too.
inline double exp_minus_one(double y) {
  if (y < -745.0) {
    return -1.0; // e^y is below the smallest double
  }
  // y = k ln(2) + r, |r| <= ln(2)/2, ln(2) in two parts so that r is exact; e^r - 1 by Taylor's
  // series in Horner's form (16 terms reach double precision); then e^y - 1 = 2^k (e^r - 1) +
  // (2^k - 1), both parts exact but for one rounding.
  constexpr double ln2_high = 0x1.62e42fee00000p-1;
  constexpr double ln2_low = 0x1.a39ef35793c76p-33;
  constexpr double log2e = 0x1.71547652b82fep+0;
  const auto k = static_cast<int>(y * log2e - 0.5); // to the nearest: y * log2e <= 0
  const double r = (y - k * ln2_high) - k * ln2_low;
  double factor = 1.0;
  for (int n = 16; n >= 2; --n) {
    factor = 1.0 + factor * r / n;
  }
  const double r_minus_one = r * factor;
  if (k == 0) {
    return r_minus_one;
  }
  // 2^k by its bits; below the normal range in two steps.
  const auto power_of_two = [](int power) {
    return std::bit_cast<double>(static_cast<std::uint64_t>(power + 1023) << 52);
  };
  const double scale = k >= -1022 ? power_of_two(k) : power_of_two(k + 600) * power_of_two(-600);
  return scale * r_minus_one + (scale - 1.0);
}

// The nearest whole number to a value >= 0, halves away from zero (llround's).
inline std::uint64_t rounded(double value) {
  if (!(value > 0.0)) {
    return 0;
  }
  if (value >= 0x1p63) {
    return std::uint64_t{1} << 63;
  }
  const auto whole = static_cast<std::uint64_t>(value);
  return whole + (value - static_cast<double>(whole) >= 0.5 ? 1 : 0);
}

} // namespace hotscope::heap::math
