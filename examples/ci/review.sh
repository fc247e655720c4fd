#!/usr/bin/env bash
# Compares a pull request's benchmark profile with its base's and creates, or updates, one
# comment on the pull request with the result (docs/ci.md):
#   review.sh BASE_STATS NEW_STATS POLICY
# BASE_STATS and NEW_STATS are stats.json (or heap.json) files of the base's and the head's runs;
# POLICY is the regression policy (TOML). The comment is found again by its first line, a marker;
# it is rewritten only when its text changes (`hotscope diff --format markdown` gives the same
# bytes for the same input). Exits as `hotscope diff` does: 0 within the policy, 1 a budget or
# rule broken (after commenting, so the job fails with the reason on the pull request), 2 bad
# input.
# Environment: GITHUB_REPOSITORY (owner/name) and PR_NUMBER; gh authenticated (GH_TOKEN);
# HOTSCOPE, the hotscope executable (default: hotscope on PATH); HOTSCOPE_MARKER, the marker
# (default <!-- hotscope-review -->: one comment per workflow that sets its own).
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: review.sh BASE_STATS NEW_STATS POLICY" >&2
  exit 2
fi
: "${GITHUB_REPOSITORY:?owner/name of the repository}" "${PR_NUMBER:?the number of the pull request}"
hotscope=${HOTSCOPE:-hotscope}
marker=${HOTSCOPE_MARKER:-<!-- hotscope-review -->}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

status=0
"$hotscope" diff "$1" "$2" --format markdown --policy "$3" >"$work/diff.md" || status=$?
if [[ $status -ne 0 && $status -ne 1 ]]; then
  exit "$status" # bad input: hotscope said why on stderr; nothing to comment
fi
{
  printf '%s\n' "$marker"
  cat "$work/diff.md"
} >"$work/body.md"

comments="repos/$GITHUB_REPOSITORY/issues/$PR_NUMBER/comments"
# The first comment that starts with the marker (one id a line, from every page).
id=$(gh api "$comments" --paginate --jq \
  ".[] | select(.body | startswith(\"$marker\")) | .id" | head -n 1)
if [[ -z $id ]]; then
  gh api --method POST "$comments" -F "body=@$work/body.md" >/dev/null
  echo "review.sh: commented on pull request $PR_NUMBER"
elif [[ "$(gh api "repos/$GITHUB_REPOSITORY/issues/comments/$id" --jq .body)" == "$(cat "$work/body.md")" ]]; then
  echo "review.sh: comment $id is up to date"
else
  gh api --method PATCH "repos/$GITHUB_REPOSITORY/issues/comments/$id" \
    -F "body=@$work/body.md" >/dev/null
  echo "review.sh: updated comment $id"
fi
exit "$status"
