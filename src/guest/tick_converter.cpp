#include "guest/tick_converter.hpp"

namespace hotscope::guest {

std::optional<std::uint64_t> to_host_ticks(const ClockAnchor& clock, std::uint64_t guest_ticks) {
  return TickConverter(clock)(guest_ticks);
}

} // namespace hotscope::guest
