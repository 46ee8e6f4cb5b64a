#!/usr/bin/env bash
# Runs ON the GPU machine (no package registries there): unpacks the carried .debs into
# /tmp/argus-deps, configures and builds Argus against them (the given targets, else everything;
# in $ARGUS_BUILD_DIR, else /tmp/argus-build). Prints the build dir; the build's output goes to
# stderr. Usage: device-build.sh [TARGET...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
deps=/tmp/argus-deps
if [ ! -d "$deps/usr" ]; then
  for deb in "$root"/.debs/*.deb; do dpkg -x "$deb" "$deps"; done
fi
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
build="${ARGUS_BUILD_DIR:-/tmp/argus-build}"
# NCCL for bench/overlap's multi-GPU pipeline: the one PyTorch ships, unless one is named.
if [ -z "${ARGUS_NCCL_ROOT:-}" ]; then
  ARGUS_NCCL_ROOT=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null) &&
    export ARGUS_NCCL_ROOT LD_LIBRARY_PATH="$ARGUS_NCCL_ROOT/lib:$LD_LIBRARY_PATH"
fi
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_PREFIX_PATH="$deps/usr" -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" >&2
if [ $# -gt 0 ]; then set -- --target "$@"; fi
cmake --build "$build" -j "$(nproc)" "$@" >&2
echo "$build"
