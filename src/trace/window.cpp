#include "trace/window.hpp"

#include <algorithm>

namespace hotscope::trace {
namespace {

// Chunks of up to 2048 events (64 KiB), and at least 16 chunks in a window when it can hold
// that many events: eviction then never takes more than a sixteenth of the window at once.
constexpr std::size_t kMostChunkEvents = 2048;
constexpr std::size_t kLeastChunks = 16;
// Runtime messages are rare beside scopes: a chunk keeps text slots for one event in eight.
constexpr std::size_t kEventsPerTextSlot = 8;

// What a string holds beyond its own object: nothing while it fits in place (SSO).
std::size_t text_bytes(const std::string& text) {
  return text.capacity() > std::string().capacity() ? text.capacity() : 0;
}

} // namespace

WindowChunk::WindowChunk(std::size_t event_capacity, std::size_t text_capacity)
    : events(std::make_unique_for_overwrite<WindowEvent[]>(event_capacity)),
      texts(std::make_unique<std::string[]>(text_capacity)) {}

TraceWindow::TraceWindow(std::size_t bytes_limit)
    : bytes_limit_(bytes_limit),
      chunk_events_(std::clamp<std::size_t>(bytes_limit / sizeof(WindowEvent) / kLeastChunks, 1,
                                            kMostChunkEvents)),
      chunk_texts_((chunk_events_ + kEventsPerTextSlot - 1) / kEventsPerTextSlot) {}

TraceWindow::Chunk& TraceWindow::room_for(bool with_text) {
  if (chunks_.empty() || chunks_.back().events == chunk_events_ ||
      (with_text && chunks_.back().texts == chunk_texts_)) {
    const std::size_t bytes =
        chunk_events_ * sizeof(WindowEvent) + chunk_texts_ * sizeof(std::string);
    chunks_.push_back({std::make_shared<WindowChunk>(chunk_events_, chunk_texts_), 0, 0, bytes});
    bytes_ += bytes;
  }
  return chunks_.back();
}

void TraceWindow::push(const WindowEvent& event) {
  if (bytes_limit_ == 0) {
    ++evicted_;
    return;
  }
  Chunk& chunk = room_for(false);
  chunk.chunk->events[chunk.events++] = event;
  ++events_;
  evict_while_over_limit();
}

void TraceWindow::push_text(WindowEvent event, std::string text) {
  if (bytes_limit_ == 0) {
    ++evicted_;
    return;
  }
  Chunk& chunk = room_for(true);
  const std::size_t extra = text_bytes(text);
  chunk.bytes += extra;
  bytes_ += extra;
  event.name = kInlineText;
  event.value = static_cast<std::int64_t>(chunk.texts);
  chunk.chunk->texts[chunk.texts++] = std::move(text);
  chunk.chunk->events[chunk.events++] = event;
  ++events_;
  evict_while_over_limit();
}

// The newest chunk always stays: it holds the event just pushed.
void TraceWindow::evict_while_over_limit() {
  while (bytes_ > bytes_limit_ && chunks_.size() > 1) {
    const Chunk& oldest = chunks_.front();
    bytes_ -= oldest.bytes;
    events_ -= oldest.events;
    evicted_ += oldest.events;
    chunks_.pop_front();
  }
}

void TraceWindow::clear() {
  chunks_.clear();
  events_ = 0;
  bytes_ = 0;
  evicted_ = 0;
}

std::uint64_t TraceWindow::oldest_ticks() const {
  return chunks_.empty() || chunks_.front().events == 0 ? UINT64_MAX
                                                        : chunks_.front().chunk->events[0].ticks;
}

std::vector<WindowPiece> TraceWindow::view() const {
  std::vector<WindowPiece> pieces;
  pieces.reserve(chunks_.size());
  for (const Chunk& chunk : chunks_) {
    pieces.push_back({chunk.chunk, chunk.events});
  }
  return pieces;
}

} // namespace hotscope::trace
