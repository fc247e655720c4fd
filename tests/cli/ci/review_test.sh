#!/usr/bin/env bash
# examples/ci/review.sh run locally with a stand-in `gh` (./gh) that records its calls and keeps
# the pull request's comments in a file (docs/ci.md): the first run creates the comment, a
# second run with another result updates that same comment (found by its marker among others'),
# a run with the same result leaves it alone, a broken budget of examples/ci/hotscope-policy.toml
# fails the run after commenting, and bad input fails before any call; `hotscope check` on the
# same files exits 0, 1 and 2.
# usage: review_test.sh HOTSCOPE REVIEW_SH POLICY WORK
set -euo pipefail
hotscope=$1 review=$2 policy=$3 work=$4
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"
mkdir -p "$work/bin" "$work/state"
ln -s "$here/gh" "$work/bin/gh"
export PATH="$work/bin:$PATH" GH_STATE="$work/state" HOTSCOPE="$hotscope"
export GITHUB_REPOSITORY=owner/project PR_NUMBER=12
# Someone else's comment comes first.
echo '[{"id": 7, "body": "Looks good to me"}]' >"$GH_STATE/comments.json"

# stats.json of a benchmark: handle_request's calls all take MEAN ns.
profile() {
  cat >"$work/$1.json" <<JSON
{"hotscope_version": "0.1.0", "pid": 1, "process_name": "bench", "duration_ns": 1000000000,
 "functions": [
  {"name": "handle_request", "file": "server.cpp", "line": 10, "calls": 200, "mean_ns": $2,
   "total_ns": $(($2 * 200)), "self_ns": $(($2 * 200)), "p50_ns": $2, "p95_ns": $2, "p99_ns": $2,
   "alloc_bytes_total": 0, "alloc_blocks_total": 0},
  {"name": "parse", "file": "parse.cpp", "line": 40, "calls": 200, "mean_ns": 5000,
   "total_ns": 1000000, "self_ns": 1000000, "p50_ns": 5000, "p95_ns": 5000, "p99_ns": 5000,
   "alloc_bytes_total": 0, "alloc_blocks_total": 0}]}
JSON
}
profile base 1000000
profile same 1005000 # +0.5 %: within noise
profile slow 3000000 # p99 3 ms: over the 2 ms budget, +200 %

fail() {
  echo "review_test: $*" >&2
  echo "--- calls:" >&2
  cat "$GH_STATE/calls.log" >&2 || true
  echo "--- comments:" >&2
  cat "$GH_STATE/comments.json" >&2
  exit 1
}
# Runs review.sh on BASE NEW; checks its exit status and the gh calls it made (their methods).
run() {
  : >"$GH_STATE/calls.log"
  local status=0
  bash "$review" "$work/base.json" "$work/$1.json" "$policy" >"$work/out.txt" 2>&1 || status=$?
  [[ $status -eq $2 ]] || fail "$1: exit $status, not $2: $(cat "$work/out.txt")"
  local methods
  methods=$(grep -o -- '--method [A-Z]*' "$GH_STATE/calls.log" | tr '\n' ' ' || true)
  [[ $methods == "$3" ]] || fail "$1: calls with '$methods', not '$3'"
}
ours() { jq -r '.[] | select(.id != 7) | .body' "$GH_STATE/comments.json"; }
count() { jq length "$GH_STATE/comments.json"; }

run same 0 "--method POST "
[[ $(count) -eq 2 ]] || fail "the first run did not add one comment"
[[ $(ours | head -n 1) == "<!-- hotscope-review -->" ]] || fail "no marker on the first line"
ours | grep -q '^\*\*hotscope: passes\*\*' || fail "no passing verdict"

run slow 1 "--method PATCH "
[[ $(count) -eq 2 ]] || fail "the second run added a comment instead of updating"
[[ $(jq -r '.[1].id' "$GH_STATE/comments.json") == 8 ]] || fail "our comment's id changed"
ours | grep -q '^\*\*hotscope: fails\*\*' || fail "no failing verdict"
ours | grep -qF '| **fails** | `function handle_request` | `p99 = "< 2ms"` | 3.00 ms |' ||
  fail "the broken budget is not in the comment"
grep -q "updated comment 8" "$work/out.txt" || fail "$(cat "$work/out.txt")"

run slow 1 ""
grep -q "comment 8 is up to date" "$work/out.txt" || fail "$(cat "$work/out.txt")"

echo 'p99 = "< 2 parsecs"' >"$work/bad.toml"
: >"$GH_STATE/calls.log"
status=0
bash "$review" "$work/base.json" "$work/slow.json" "$work/bad.toml" >"$work/out.txt" 2>&1 ||
  status=$?
[[ $status -eq 2 ]] || fail "a bad policy: exit $status, not 2"
grep -q "bad.toml:1: unknown key 'p99'" "$work/out.txt" || fail "$(cat "$work/out.txt")"
[[ ! -s $GH_STATE/calls.log ]] || fail "bad input still called gh"
# `hotscope check`: the policy's absolute budgets on one run; exit 0, 1 (naming the budget), 2.
check() {
  local status=0
  "$hotscope" check "$work/$1" --policy "$2" >"$work/out.txt" 2>&1 || status=$?
  [[ $status -eq $3 ]] || fail "check $1 --policy $2: exit $status, not $3: $(cat "$work/out.txt")"
}
check same.json "$policy" 0
check slow.json "$work/bad.toml" 2
check slow.json "$policy" 1
grep -qF 'FAILS function handle_request: p99 = "< 2ms" is 3.00 ms (line 9)' "$work/out.txt" ||
  fail "check does not name the broken budget: $(cat "$work/out.txt")"
echo "review_test: created, updated, left alone, failed on a broken budget and on bad input;" \
  "check's exit codes"
