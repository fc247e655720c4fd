// What `hotscope attach` learns about a process before it touches it (docs/heap.md, "Attach to a
// running program"): who owns it, whether the kernel lets this process trace it, whether hotscope
// is in it already, and where its C library's functions are. Read from /proc and the ELF files
// of its mappings; nothing here stops or changes the process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace hotscope::cli::attach {

// The facts a refusal is decided on.
struct Facts {
  bool exists = true;
  uid_t owner = 0;            // the process's real uid
  uid_t self = 0;             // this process's effective uid
  bool can_trace_any = false; // CAP_SYS_PTRACE in this process's effective set
  int yama_scope = -1;        // /proc/sys/kernel/yama/ptrace_scope; -1 without Yama
  bool descendant = false;    // the process descends from this one
  pid_t tracer = 0;           // TracerPid
  bool linked_heap = false;   // linked with hotscope's heap library
  bool preloaded = false;     // started with hotscope's preload library (`hotscope run --heap`)
  bool has_dlopen = true;     // a dynamically linked process whose C library has dlopen
};

// One line naming why `pid` cannot be attached and how to fix that, or "" when nothing stands in
// the way that the facts show (the kernel may still refuse: refusal_for_errno).
std::string refusal(pid_t pid, const Facts& facts);

// The line for the kernel's refusal of PTRACE_SEIZE with `error` when the facts showed none
// (a container without CAP_SYS_PTRACE, a seccomp filter, an LSM).
std::string refusal_for_errno(pid_t pid, int error);

// The facts of `pid` as /proc shows them now.
Facts read_facts(pid_t pid);

// The address in `pid` of the C library's function `name` (dlopen, dlsym, setenv, unsetenv),
// from libc.so.6 (glibc >= 2.34 has dlopen there) or else libdl.so.2.
std::optional<std::uint64_t> libc_function(pid_t pid, const std::string& name);

// The pids whose name (/proc/PID/comm) is `name`, this process excluded.
std::vector<pid_t> pids_named(const std::string& name);

} // namespace hotscope::cli::attach
