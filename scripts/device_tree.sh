#!/usr/bin/env bash
# Shrink what a lent GPU machine is sent, and put it back (experiments/README.md, "The GPU half").
#
#   bash scripts/device_tree.sh shrink    # before the device call: the tree it sends ≤ 64 MiB
#   bash scripts/device_tree.sh restore   # right after it: the index and .git/info/exclude as before
#
# The device tool sends this checkout's tracked files and its untracked files git does not ignore,
# at most 64 MiB; the checkout is larger (the chapters' stored outputs, the book-profile records).
# A burst needs neither. `shrink` takes them out of the index only (git rm --cached: no file in the
# work tree is touched) and ignores them in .git/info/exclude, so the tool leaves them behind;
# `restore` resets the index and the exclude file. Nothing is committed either way: run `restore`
# before any commit (shrink refuses to run on a dirty index, and says so).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
EXCLUDE=.git/info/exclude
SAVED=.git/info/exclude.device-tree
LEFT_BEHIND=(book results/in-progress tests/fixtures)
LEFT_BEHIND_GLOBS=('results/*.book.*' 'results/*.quick.*')

case "${1:-}" in
  shrink)
    [ -e "$SAVED" ] && { echo "device_tree: already shrunk ($SAVED exists): run 'restore' first" >&2; exit 2; }
    git diff --cached --quiet || { echo "device_tree: the index has staged changes: commit or unstage them first" >&2; exit 2; }
    mkdir -p .git/info && touch "$EXCLUDE" && cp "$EXCLUDE" "$SAVED"
    for p in "${LEFT_BEHIND[@]}"; do echo "/$p/" >> "$EXCLUDE"; done
    for g in "${LEFT_BEHIND_GLOBS[@]}"; do echo "/$g" >> "$EXCLUDE"; done
    git rm -r -q --cached --ignore-unmatch "${LEFT_BEHIND[@]}" "${LEFT_BEHIND_GLOBS[@]}"
    bytes=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -n 1 | cut -f 1)
    others=$(git ls-files -z --others --exclude-standard | xargs -0 -r du -cb 2>/dev/null | tail -n 1 | cut -f 1)
    total=$(( bytes + ${others:-0} ))
    echo "device_tree: the device is sent $(( total / 1048576 )) MiB (limit 64): tracked $(( bytes / 1048576 )), untracked $(( ${others:-0} / 1048576 ))"
    [ "$total" -le $(( 64 * 1048576 )) ] || { echo "device_tree: still over 64 MiB" >&2; exit 1; }
    ;;
  restore)
    [ -e "$SAVED" ] || { echo "device_tree: nothing to restore (not shrunk)"; exit 0; }
    git reset -q
    mv "$SAVED" "$EXCLUDE"
    echo "device_tree: index and $EXCLUDE restored"
    ;;
  *)
    echo "usage: bash scripts/device_tree.sh shrink|restore" >&2; exit 2 ;;
esac
