// Guest ticks to host ticks, for the validator and to_host_ticks (guest.hpp).
#pragma once

#include "guest/guest.hpp"

#include <cstdint>
#include <optional>

namespace hotscope::guest {

// Guest ticks to host ticks with the rate ratio computed once (a division per record showed in
// the benchmark). long double holds every uint64_t exactly, and the ratio to 64 bits: the
// result is within a tick whatever the distance from the anchor.
class TickConverter {
public:
  explicit TickConverter(const ClockAnchor& clock)
      : clock_(clock), ratio_(static_cast<long double>(clock.host_ticks_per_second) /
                              static_cast<long double>(clock.guest_ticks_per_second)) {}

  std::optional<std::uint64_t> operator()(std::uint64_t guest_ticks) const {
    constexpr std::uint64_t kMax = INT64_MAX;
    const bool before = guest_ticks < clock_.guest_ticks;
    const std::uint64_t distance =
        before ? clock_.guest_ticks - guest_ticks : guest_ticks - clock_.guest_ticks;
    const long double scaled = static_cast<long double>(distance) * ratio_;
    if (!(scaled < static_cast<long double>(kMax))) {
      return std::nullopt;
    }
    const auto host_distance = static_cast<std::uint64_t>(scaled + 0.5L); // rounded, >= 0
    if (before) {
      if (host_distance > clock_.host_ticks) {
        return std::nullopt;
      }
      return clock_.host_ticks - host_distance;
    }
    if (clock_.host_ticks > kMax || host_distance > kMax - clock_.host_ticks) {
      return std::nullopt;
    }
    return clock_.host_ticks + host_distance;
  }

private:
  ClockAnchor clock_;
  long double ratio_;
};

} // namespace hotscope::guest
