// The locks as lines and cells of text (docs/locks.md, "Reading contention", "Deadlocks"):
// what `hotscope locks` prints, the console's locks tab and threads banner and report.html's
// locks are made of, so that all say the same (the deadlock lines as the agent's
// `hotscope threads` text and report.txt write them).
#pragma once

#include "profiles/profiles.hpp"

#include <string>
#include <vector>

namespace hotscope::cli {

// "deadlock: locker-a waits for m2 (held by locker-b for 12.30 s) → locker-b waits for m1 (held
// by locker-a for 12.50 s)", then each waiter's open scopes under it ("  locker-a in outer >
// inner"), as `hotscope threads` and report.txt write them.
std::vector<std::string> deadlock_lines(const profiles::Deadlock& deadlock);
// "lock-order inversion: m1 then m2 (locker-a), m2 then m1 (locker-b)"; with `sites`, each
// site's scopes and stack frames under it.
std::vector<std::string> inversion_lines(const profiles::LockInversion& inversion, bool sites);
// The locks table: a heading, then one row of cells per lock, in the order given.
std::vector<std::vector<std::string>> lock_table(const std::vector<profiles::LockStats>& locks);

} // namespace hotscope::cli
