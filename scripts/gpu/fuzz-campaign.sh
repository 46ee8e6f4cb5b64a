#!/usr/bin/env bash
# Runs ON a lent machine with many cores (carry .debs and build-fuzz-bin/): the long fuzzing
# campaign that docs/hardening.md records, with the libFuzzer binaries built here by
# `scripts/gpu/fuzz-campaign.sh --pack` (Clang is not installed there).
# Usage:
#   fuzz-campaign.sh --pack                 (here) strip build-san's fuzz_* into build-fuzz-bin/
#   fuzz-campaign.sh TARGET:SECONDS ...     (there) fuzz each target that long on every core;
#                                           summary.tsv, logs and crash inputs go to $OUT
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
if [ "${1:-}" = "--pack" ]; then
  rm -rf build-fuzz-bin && mkdir build-fuzz-bin
  for f in build-san/tests/fuzz/fuzz_*; do
    case "$f" in *_replay) continue ;; esac
    [ -x "$f" ] && [ -f "$f" ] && strip -o "build-fuzz-bin/$(basename "$f")" "$f"
  done
  du -sh build-fuzz-bin
  exit 0
fi
source "$root/scripts/gpu/lib.sh"
gpu_setup
nproc >"$out/cores.txt"
# The binaries were built in another tree: their seed workspace and fixtures are this one's.
export ARGUS_FUZZ_WORKSPACE="$root/tests/data/workspace" ARGUS_FUZZ_DATA="$root/tests/data"
status=0
for spec in "$@"; do
  t="${spec%%:*}"
  s="${spec##*:}"
  scripts/hardening.sh fuzz --bin build-fuzz-bin --only "$t" --seconds "$s" \
    --corpus "/tmp/argus-fuzz/$t" || status=1
  tail -n +2 "/tmp/argus-fuzz/$t/summary.tsv" >>"$out/summary.tsv"
  cp "/tmp/argus-fuzz/$t/$t.log" "$out/" 2>/dev/null || true
  if ls /tmp/argus-fuzz/$t/crashes/* >/dev/null 2>&1; then
    mkdir -p "$out/crashes" && cp /tmp/argus-fuzz/$t/crashes/* "$out/crashes/" || true
  fi
done
cat "$out/summary.tsv"
exit $status
