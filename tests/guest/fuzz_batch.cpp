// libFuzzer target on the guest batch validator (docs/guest.md, "Fuzzing"). The input is the
// guest's whole memory: a header that says where up to four batches lie, followed by anything.
// Whatever the bytes, the validator must neither crash nor read outside the input (ASan), and an
// accepted batch must come out in host form: known kinds (a queue record names its queue by a
// location, as scopes and counters do), refs to readable host copies, ticks in order, scopes
// well nested, payloads inside the output; its heap events within the format's bounds.
#include "guest/guest.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

using namespace hotscope::guest;

constexpr std::uint64_t kBase = 0x10000;
constexpr std::size_t kHeader = 2 + 4 * 6;

std::uint16_t u16(const std::uint8_t* data) {
  std::uint16_t value = 0;
  std::memcpy(&value, data, sizeof(value));
  return value;
}

void require(bool condition) {
  if (!condition) {
    __builtin_trap();
  }
}

// Reads every byte of a host copy, so ASan sees a bad address.
void touch(const char* text) {
  require(text != nullptr);
  require(std::strlen(text) < BatchValidator::kMaxTextBytes);
}

void check_host_form(std::span<const hotscope_record> records, std::size_t& depth,
                     std::uint64_t& last_ticks) {
  for (std::size_t i = 0; i < records.size(); i += 1 + records[i].payload_records) {
    const hotscope_record& record = records[i];
    require(record.payload_records < records.size() - i);
    require(record.ticks >= last_ticks);
    last_ticks = record.ticks;
    switch (record.kind) {
    case HOTSCOPE_RECORD_BEGIN:
    case HOTSCOPE_RECORD_END:
    case HOTSCOPE_RECORD_COUNTER:
    case HOTSCOPE_RECORD_QUEUE_PUSH:
    case HOTSCOPE_RECORD_QUEUE_POP:
    case HOTSCOPE_RECORD_QUEUE_CAPACITY: {
      const auto* location = reinterpret_cast<const hotscope_source_location*>(record.ref);
      touch(location->name);
      touch(location->file);
      if (record.kind == HOTSCOPE_RECORD_BEGIN) {
        ++depth;
      } else if (record.kind == HOTSCOPE_RECORD_END) {
        require(depth > 0);
        --depth;
      }
      break;
    }
    case HOTSCOPE_RECORD_MESSAGE_STATIC:
      touch(reinterpret_cast<const char*>(record.ref));
      break;
    case HOTSCOPE_RECORD_MESSAGE_INLINE:
    case HOTSCOPE_RECORD_THREAD_NAME:
      require(record.value <= record.payload_records * std::uint64_t{HOTSCOPE_RECORD_SIZE});
      break;
    case HOTSCOPE_RECORD_ALLOCATION:
      require(record.payload_records == 0);
      break;
    default:
      require(false); // STACK becomes messages; nothing else gets through
    }
  }
  require(depth <= BatchValidator::kMaxDepth);
}

// Heap events: a block address (a failed realloc apart), a believable size, a stack of return
// addresses within the frame limit, in time order.
void check_heap_events(std::span<const GuestHeapEvent> events, std::uint64_t& last_ticks) {
  for (const GuestHeapEvent& event : events) {
    require(event.kind == HOTSCOPE_RECORD_HEAP_ALLOC || event.kind == HOTSCOPE_RECORD_HEAP_FREE ||
            event.kind == HOTSCOPE_RECORD_HEAP_REALLOC);
    require(event.address != 0 || event.kind == HOTSCOPE_RECORD_HEAP_REALLOC);
    require(event.size <= BatchValidator::kMaxAllocation);
    require(event.stack.size() <= HOTSCOPE_STACK_FRAMES_MAX);
    for (const std::uint64_t frame : event.stack) {
      require(frame != 0);
    }
    require(event.ticks >= last_ticks);
    last_ticks = event.ticks;
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kHeader) {
    return 0;
  }
  const FlatMemory memory(data, kBase, size);
  NameStore names(NameStore::Limits{64, 1 << 16, 32});
  const double guest_rates[4] = {1e9, 3e9, 1e6, 2.5e10};
  const ClockAnchor clock{0, std::uint64_t{1} << 40, guest_rates[data[1] % 4], 1e9};
  const Symbolizer symbolizer = [](std::uint64_t address) -> std::optional<Symbol> {
    if (address % 3 == 0) {
      return std::nullopt;
    }
    return Symbol{address % 3 == 1 ? "guest_fn" : "bad\x7fname", address % 64};
  };
  BatchValidator validator("guest: fuzz", memory, clock, symbolizer, names);
  std::size_t depth = 0;
  std::uint64_t last_ticks = 0;
  std::uint64_t last_heap_ticks = 0;
  const unsigned batches = 1 + data[0] % 4;
  for (unsigned b = 0; b < batches; ++b) {
    const std::uint8_t* header = data + 2 + 6 * b;
    const BatchValidator::Result result =
        validator.validate(kBase + u16(header), u16(header + 2), u16(header + 4));
    if (result.rejected) {
      require(!result.rejected->message.empty());
      continue;
    }
    check_host_form(result.records, depth, last_ticks);
    check_heap_events(result.heap, last_heap_ticks);
  }
  const std::span<const hotscope_record> ends = validator.close_open_scopes(0);
  check_host_form(ends, depth, last_ticks);
  require(depth == 0);
  const GuestCounts& counts = validator.counts();
  require(counts.batches_accepted + counts.batches_rejected == batches);
  return 0;
}
