// The sample guest's allocator (docs/guest.md, "Guest heap profiles"): a first-fit free list over
// a static arena, as a freestanding guest without libc would have. It reports every block it
// hands out, takes back or resizes to the host with HOTSCOPE_GUEST_ALLOC / _FREE / _REALLOC, so
// the host can profile the guest's heap. Include after hotscope_guest.h.
#pragma once

namespace arena {

// Every block starts with a header; sizes are rounded up to whole headers, which keeps the
// blocks 16-byte aligned.
struct Header {
  uint64_t size; // bytes after the header
  Header* next;  // the next free block, by address (free blocks only)
};
static_assert(sizeof(Header) == 16);

constexpr uint64_t kArenaBytes = 64 * 1024;
alignas(16) inline unsigned char memory[kArenaBytes];
inline Header* free_list = nullptr;
inline bool ready = false;

inline uint64_t rounded(uint64_t size) {
  return (size + sizeof(Header) - 1) / sizeof(Header) * sizeof(Header);
}

// First fit; a block larger than needed is split. Nothing reported: the callers do.
inline void* take(uint64_t size) {
  if (!ready) {
    free_list = reinterpret_cast<Header*>(memory);
    free_list->size = kArenaBytes - sizeof(Header);
    free_list->next = nullptr;
    ready = true;
  }
  size = rounded(size == 0 ? 1 : size);
  for (Header** link = &free_list; *link != nullptr; link = &(*link)->next) {
    Header* block = *link;
    if (block->size < size) {
      continue;
    }
    if (block->size >= size + 2 * sizeof(Header)) {
      auto* rest = reinterpret_cast<Header*>(reinterpret_cast<unsigned char*>(block + 1) + size);
      rest->size = block->size - size - sizeof(Header);
      rest->next = block->next;
      block->size = size;
      *link = rest;
    } else {
      *link = block->next;
    }
    return block + 1;
  }
  return nullptr;
}

inline Header* end_of(Header* block) {
  return reinterpret_cast<Header*>(reinterpret_cast<unsigned char*>(block + 1) + block->size);
}

// Back into the list, in address order, merged with the free neighbours.
inline void give_back(void* pointer) {
  Header* block = static_cast<Header*>(pointer) - 1;
  Header* before = nullptr;
  Header* after = free_list;
  while (after != nullptr && after < block) {
    before = after;
    after = after->next;
  }
  block->next = after;
  (before != nullptr ? before->next : free_list) = block;
  if (after != nullptr && end_of(block) == after) {
    block->size += sizeof(Header) + after->size;
    block->next = after->next;
  }
  if (before != nullptr && end_of(before) == block) {
    before->size += sizeof(Header) + block->size;
    before->next = block->next;
  }
}

__attribute__((noinline)) inline void* allocate(uint64_t size) {
  void* block = take(size);
  if (block != nullptr) {
    HOTSCOPE_GUEST_ALLOC(block, size);
  }
  return block;
}

__attribute__((noinline)) inline void release(void* block) {
  if (block != nullptr) {
    HOTSCOPE_GUEST_FREE(block);
    give_back(block);
  }
}

// In place when the block is large enough, else moved.
__attribute__((noinline)) inline void* resize(void* block, uint64_t size) {
  if (block == nullptr) {
    return allocate(size);
  }
  Header* header = static_cast<Header*>(block) - 1;
  void* moved = block;
  if (header->size < size) {
    moved = take(size);
    if (moved != nullptr) {
      __builtin_memcpy(moved, block, header->size);
      give_back(block);
    }
  }
  HOTSCOPE_GUEST_REALLOC(block, moved, size);
  return moved;
}

} // namespace arena
