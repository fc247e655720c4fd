// A file written from a signal handler: a fixed buffer flushed with write(2), and the numbers and
// JSON strings a crash report holds. No allocation, no lock, no locale (docs/crash.md).
#pragma once

#include <cstddef>
#include <cstdint>

namespace hotscope::crash {

class Output {
public:
  // Writes to `fd` (-1: writes nothing).
  explicit Output(int fd) : fd_(fd) {}
  // In memory: what does not fit the buffer is cut. A line composed once for both files.
  Output() : fd_(kMemory) {}
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() {
    if (fd_ != kMemory) {
      flush();
    }
  }

  Output& text(const char* text);
  Output& text(const char* text, std::size_t length);
  Output& number(std::uint64_t value);
  Output& signed_number(std::int64_t value);
  Output& hex(std::uint64_t value); // "0x1f"
  // Milliseconds with three decimals, from nanoseconds: "12.345".
  Output& milliseconds(std::uint64_t ns);
  // A JSON string, quoted; control characters and bytes that are not UTF-8 escaped.
  Output& json(const char* text);
  Output& json(const char* text, std::size_t length);
  // A JSON array's or object's separator: nothing before the first item, "," before the others.
  Output& separator(bool& first);
  void flush();
  const char* data() const { return buffer_; }
  std::size_t size() const { return used_; }

private:
  static constexpr int kMemory = -2;
  void put(char c) {
    if (used_ == sizeof buffer_) {
      if (fd_ == kMemory) {
        return;
      }
      flush();
    }
    buffer_[used_++] = c;
  }

  int fd_;
  std::size_t used_ = 0;
  char buffer_[4096];
};

} // namespace hotscope::crash
