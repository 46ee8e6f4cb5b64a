#!/usr/bin/env bash
# Builds all of Argus (installing what is missing, via setup.sh --all: every target and the
# benchmarks' wheels) and runs the whole test suite.
# Without a GPU the tests labelled `gpu` are reported as skipped, with the reason.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$root/scripts/setup.sh" --all
build="${ARGUS_BUILD_DIR:-$root/build}"
cd "$build"
ctest --output-on-failure -j "$(nproc)" "$@"
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; }; then
  echo "test: the tests labelled 'gpu' were skipped: this machine has no CUDA device" \
       "(nvidia-smi lists none). Run them on a GPU machine with: ctest -L gpu"
fi
