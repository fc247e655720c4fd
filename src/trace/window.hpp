// The bounded trace window: fixed-size events in chunks, the oldest chunk evicted whole when the
// window passes its byte limit. A chunk is never written again below the count a snapshot saw,
// and a snapshot holds its chunks by shared reference, so it converts them without holding the
// collector off the rings (see TraceWindow::view).
#pragma once

#include "snapshot/snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

namespace hotscope::trace {

// 32 bytes. `name` is a name id, or kInlineText: then `value` indexes the chunk's texts.
struct WindowEvent {
  std::uint64_t ticks;
  std::uint32_t thread;
  EventKind kind;
  std::uint32_t name;
  std::int64_t value; // a counter's value
};
static_assert(sizeof(WindowEvent) == 32);
inline constexpr std::uint32_t kInlineText = UINT32_MAX;

struct WindowChunk {
  WindowChunk(std::size_t event_capacity, std::size_t text_capacity);
  std::unique_ptr<WindowEvent[]> events;
  std::unique_ptr<std::string[]> texts; // runtime message text, which only the window keeps
};

// Events of one chunk as a snapshot saw them: [0, events) are complete and stay unchanged.
struct WindowPiece {
  std::shared_ptr<const WindowChunk> chunk;
  std::size_t events = 0;
};

class TraceWindow {
public:
  explicit TraceWindow(std::size_t bytes_limit);

  void push(const WindowEvent& event);
  void push_text(WindowEvent event, std::string text);
  void clear();

  std::size_t events() const { return events_; }
  std::uint64_t evicted() const { return evicted_; }
  std::size_t bytes() const { return bytes_; }
  // Ticks of the oldest event pushed that is still in the window; UINT64_MAX when empty.
  std::uint64_t oldest_ticks() const;
  // The window as it is now, oldest first; cheap (one shared reference per chunk).
  std::vector<WindowPiece> view() const;

private:
  struct Chunk {
    std::shared_ptr<WindowChunk> chunk;
    std::size_t events = 0;
    std::size_t texts = 0;
    std::size_t bytes = 0;
  };
  Chunk& room_for(bool with_text);
  void evict_while_over_limit();

  std::size_t bytes_limit_;
  std::size_t chunk_events_;
  std::size_t chunk_texts_;
  std::deque<Chunk> chunks_;
  std::size_t events_ = 0;
  std::size_t bytes_ = 0;
  std::uint64_t evicted_ = 0;
};

} // namespace hotscope::trace
