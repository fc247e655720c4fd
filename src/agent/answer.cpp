#include "agent/answer.hpp"

#include <cstdio>

namespace hotscope::agent {

bool Budget::try_charge(std::size_t bytes) {
  std::size_t used = used_.load();
  do {
    if (used + bytes > kBudgetBytes) {
      return false;
    }
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

Answer::Answer(Budget& budget, std::function<void()> wake)
    : budget_(budget), wake_(std::move(wake)) {}

Answer::~Answer() {
  budget_.release(end_ - released_);
}

void Answer::start(std::string head, bool chunked) {
  {
    const std::lock_guard lock(mutex_);
    chunked_ = chunked;
    head_size_ = head.size();
  }
  push(std::move(head));
}

void Answer::append(std::string_view bytes) {
  pending_.append(bytes);
  if (pending_.size() >= kPieceBytes) {
    std::string piece;
    piece.swap(pending_);
    push(std::move(piece));
  }
}

void Answer::finish() {
  if (!pending_.empty()) {
    std::string piece;
    piece.swap(pending_);
    push(std::move(piece));
  }
  if (chunked_) {
    push(""); // the last chunk
  }
  {
    const std::lock_guard lock(mutex_);
    finished_ = true;
  }
  wake_();
}

void Answer::push(std::string piece) {
  if (chunked_ && head_size_ != 0 && end_ != 0) {
    char size[24];
    const int length = std::snprintf(size, sizeof(size), "%zx\r\n", piece.size());
    piece.insert(0, size, static_cast<std::size_t>(length));
    piece += "\r\n";
  }
  {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] { return abandoned_ || end_ - released_ < kAheadBytes; });
    if (abandoned_) {
      throw Abandoned{};
    }
    budget_.charge(piece.size());
    end_ += piece.size();
    pieces_.push_back(std::move(piece));
  }
  wake_();
}

std::string_view Answer::ready(std::size_t position) const {
  const std::lock_guard lock(mutex_);
  if (abandoned_ || position < released_ || position >= end_) {
    return {};
  }
  std::size_t start = released_;
  for (const std::string& piece : pieces_) {
    if (position < start + piece.size()) {
      return std::string_view(piece).substr(position - start);
    }
    start += piece.size();
  }
  return {};
}

std::size_t Answer::head_size() const {
  const std::lock_guard lock(mutex_);
  return end_ == 0 ? 0 : head_size_;
}

bool Answer::complete(std::size_t position) const {
  const std::lock_guard lock(mutex_);
  return finished_ && position == end_;
}

bool Answer::failed() const {
  const std::lock_guard lock(mutex_);
  return abandoned_;
}

bool Answer::joinable() const {
  const std::lock_guard lock(mutex_);
  return !abandoned_ && released_ == 0;
}

void Answer::release_before(std::size_t position) {
  {
    const std::lock_guard lock(mutex_);
    while (!pieces_.empty() && released_ + pieces_.front().size() <= position) {
      released_ += pieces_.front().size();
      budget_.release(pieces_.front().size());
      pieces_.pop_front();
    }
  }
  room_.notify_all();
}

void Answer::abandon() {
  {
    const std::lock_guard lock(mutex_);
    abandoned_ = true;
  }
  room_.notify_all();
}

AnswerBuffer::int_type AnswerBuffer::overflow(int_type c) {
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    const char byte = traits_type::to_char_type(c);
    answer_.append(std::string_view(&byte, 1));
  }
  return traits_type::not_eof(c);
}

std::streamsize AnswerBuffer::xsputn(const char* bytes, std::streamsize count) {
  answer_.append(std::string_view(bytes, static_cast<std::size_t>(count)));
  return count;
}

} // namespace hotscope::agent
