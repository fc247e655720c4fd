#include "guest/guest.hpp"

#include <cstring>

namespace hotscope::guest {

bool FlatMemory::read(std::uint64_t address, void* out, std::size_t size) const {
  if (address < guest_base_) {
    return false;
  }
  const std::uint64_t offset = address - guest_base_;
  // Written so that no sum can wrap: offset and size are each checked against what is left.
  if (offset > size_ || size > size_ - offset) {
    return false;
  }
  if (size > 0) {
    std::memcpy(out, host_ + offset, size);
  }
  return true;
}

} // namespace hotscope::guest
