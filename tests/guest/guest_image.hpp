// A guest's memory built by hand for the tests: static locations and texts placed at known guest
// addresses, then record batches written after them.
#pragma once

#include "guest/guest.hpp"

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace guest_test {

inline constexpr std::uint64_t kBase = 0x100000;

class GuestImage {
public:
  explicit GuestImage(std::size_t size = 1 << 16) : bytes_(size, 0) {}
  GuestImage(const GuestImage&) = delete;
  GuestImage& operator=(const GuestImage&) = delete;

  const hotscope::guest::FlatMemory& memory() const { return memory_; }
  std::uint64_t end() const { return kBase + bytes_.size(); }
  unsigned char* at(std::uint64_t address) { return bytes_.data() + (address - kBase); }

  // Raw bytes at the next free, 8-aligned address.
  std::uint64_t put(const void* data, std::size_t size) {
    next_ = (next_ + 7) & ~std::uint64_t{7};
    if (size > bytes_.size() - next_) {
      throw std::length_error("the test's guest image is too small");
    }
    const std::uint64_t address = kBase + next_;
    std::memcpy(bytes_.data() + next_, data, size);
    next_ += size;
    return address;
  }
  std::uint64_t put_text(const std::string& text) { return put(text.c_str(), text.size() + 1); }
  std::uint64_t put_location(const std::string& name, const std::string& file = "guest.c",
                             std::uint32_t line = 1, std::uint32_t flags = 0) {
    struct {
      std::uint64_t name, file;
      std::uint32_t line, flags;
    } raw{put_text(name), put_text(file), line, flags};
    return put(&raw, sizeof(raw));
  }
  std::uint64_t put_records(const std::vector<hotscope_record>& records) {
    return put(records.data(), records.size() * sizeof(hotscope_record));
  }

private:
  std::vector<unsigned char> bytes_;
  std::size_t next_ = 0;
  hotscope::guest::FlatMemory memory_{bytes_.data(), kBase, bytes_.size()};
};

inline hotscope_record rec(std::uint32_t kind, std::uint64_t ticks, std::uint64_t ref = 0,
                           std::uint64_t value = 0, std::uint32_t payload = 0) {
  return hotscope_record{ticks, ref, value, kind, payload};
}

// A text record (MESSAGE_INLINE or THREAD_NAME) and its payload, as a guest writes it.
inline void append_text(std::vector<hotscope_record>& records, std::uint32_t kind,
                        std::uint64_t ticks, const std::string& text) {
  const auto payload = static_cast<std::uint32_t>((text.size() + 31) / 32);
  records.push_back(rec(kind, ticks, 0, text.size(), payload));
  for (std::uint32_t p = 0; p < payload; ++p) {
    hotscope_record chunk{};
    std::memcpy(&chunk, text.data() + p * 32, std::min<std::size_t>(32, text.size() - p * 32));
    records.push_back(chunk);
  }
}

} // namespace guest_test
