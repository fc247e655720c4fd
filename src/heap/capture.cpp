// Stack capture for allocation hooks. Called with the thread marked "inside the profiler", so
// any allocation libunwind or the loader makes here is passed straight to the real allocator.
#include "heap/heap.hpp"

#include <dlfcn.h>
#include <link.h>
#include <pthread.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <algorithm>
#include <array>

namespace hotscope::heap {
namespace {

struct SegmentSearch {
  std::uintptr_t address;
  CodeRanges* out;
};

int add_executable_segments(dl_phdr_info* info, std::size_t, void* data) {
  auto* search = static_cast<SegmentSearch*>(data);
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;
  bool contains = false;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& header = info->dlpi_phdr[i];
    if (header.p_type != PT_LOAD || (header.p_flags & PF_X) == 0) {
      continue;
    }
    const std::uintptr_t begin = info->dlpi_addr + header.p_vaddr;
    const std::uintptr_t end = begin + header.p_memsz;
    segments.emplace_back(begin, end);
    contains = contains || (search->address >= begin && search->address < end);
  }
  if (!contains) {
    return 0;
  }
  search->out->ranges.insert(search->out->ranges.end(), segments.begin(), segments.end());
  return 1;
}

// Every operator new form, as the Itanium ABI mangles it on LP64.
constexpr std::array operator_new_symbols = {"_Znwm",
                                             "_Znam",
                                             "_ZnwmRKSt9nothrow_t",
                                             "_ZnamRKSt9nothrow_t",
                                             "_ZnwmSt11align_val_t",
                                             "_ZnamSt11align_val_t",
                                             "_ZnwmSt11align_val_tRKSt9nothrow_t",
                                             "_ZnamSt11align_val_tRKSt9nothrow_t"};

// The calling thread's stack, found once per thread: frame pointers outside it are not followed.
struct StackBounds {
  std::uintptr_t low;
  std::uintptr_t high;
};
__thread StackBounds thread_stack __attribute__((tls_model("initial-exec"))) = {0, 0};

StackBounds current_stack_bounds() {
  if (thread_stack.high == 0) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) == 0) {
      void* base = nullptr;
      std::size_t size = 0;
      if (pthread_attr_getstack(&attributes, &base, &size) == 0) {
        const auto low = reinterpret_cast<std::uintptr_t>(base);
        thread_stack = {low, low + size};
      }
      pthread_attr_destroy(&attributes);
    }
  }
  return thread_stack;
}

std::size_t walk_frame_pointers(std::span<std::uintptr_t> out) {
  const StackBounds bounds = current_stack_bounds();
  auto frame = reinterpret_cast<std::uintptr_t>(__builtin_frame_address(0));
  std::size_t count = 0;
  // A frame is [saved frame pointer, return address]; the chain must climb the stack.
  while (count < out.size() && frame >= bounds.low && frame + 16 <= bounds.high &&
         frame % sizeof(void*) == 0) {
    const auto* words = reinterpret_cast<const std::uintptr_t*>(frame);
    const std::uintptr_t return_address = words[1];
    if (return_address == 0) {
      break;
    }
    out[count++] = return_address;
    if (words[0] <= frame) {
      break;
    }
    frame = words[0];
  }
  return count;
}

} // namespace

bool CodeRanges::contains(std::uintptr_t address) const {
  return std::any_of(ranges.begin(), ranges.end(), [address](const auto& range) {
    return address >= range.first && address < range.second;
  });
}

CodeRanges own_and_allocator_code(const void* address_in_own_object) {
  CodeRanges code;
  SegmentSearch search{reinterpret_cast<std::uintptr_t>(address_in_own_object), &code};
  dl_iterate_phdr(add_executable_segments, &search);
  // libunwind's own frames sit on top of ours when it is the unwinder.
  search.address = reinterpret_cast<std::uintptr_t>(&unw_backtrace);
  dl_iterate_phdr(add_executable_segments, &search);
  for (const char* name : operator_new_symbols) {
    void* function = dlsym(RTLD_DEFAULT, name);
    Dl_info info;
    void* symbol_entry = nullptr;
    if (function != nullptr && dladdr1(function, &info, &symbol_entry, RTLD_DL_SYMENT) != 0 &&
        symbol_entry != nullptr) {
      const auto* symbol = static_cast<const ElfW(Sym)*>(symbol_entry);
      const auto begin = reinterpret_cast<std::uintptr_t>(function);
      code.ranges.emplace_back(begin, begin + std::max<ElfW(Xword)>(symbol->st_size, 1));
    }
  }
  return code;
}

std::size_t capture_stack(Unwinder unwinder, const CodeRanges& skip,
                          std::span<std::uintptr_t> out) {
  // Room for the frames that get dropped: the hook, the capture, the unwinder, operator new.
  constexpr std::size_t extra = 16;
  std::array<std::uintptr_t, 256 + extra> raw;
  const std::size_t wanted = std::min(out.size() + extra, raw.size());
  std::size_t count = 0;
  if (unwinder == Unwinder::FramePointers) {
    count = walk_frame_pointers({raw.data(), wanted});
  } else {
    const int got = unw_backtrace(reinterpret_cast<void**>(raw.data()), static_cast<int>(wanted));
    count = got > 0 ? static_cast<std::size_t>(got) : 0;
  }
  std::size_t first = 0;
  while (first < count && skip.contains(raw[first])) {
    ++first;
  }
  const std::size_t kept = std::min(count - first, out.size());
  std::copy_n(raw.begin() + static_cast<std::ptrdiff_t>(first), kept, out.begin());
  return kept;
}

} // namespace hotscope::heap
