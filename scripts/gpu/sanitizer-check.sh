#!/usr/bin/env bash
# Runs ON a lent machine (carry .debs; many cores, no Clang): scripts/hardening.sh's asan and tsan
# stages built by g++ against the carried Debian libraries, so that the whole suite runs under
# the sanitizers in minutes rather than the dev machine's hour. The tests labelled gpu are left
# out (a sanitized injection library cannot load into an uninstrumented program).
# Usage: sanitizer-check.sh [asan] [tsan]   (default both); logs under $OUT.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
source "$root/scripts/gpu/lib.sh"
gpu_setup
deps=/tmp/argus-deps
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1"
start=$(date +%s)
since() { echo "$(($(date +%s) - start)) s"; }
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(asan tsan)
configure() {  # DIR SANITIZERS EXTRA...
  local dir="$1" san="$2"
  shift 2
  cmake -S "$root" -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCMAKE_PREFIX_PATH="$deps/usr" \
    -DCMAKE_CUDA_COMPILER="$(command -v nvcc)" -DARGUS_SANITIZE="$san" \
    -DARGUS_BUILD_BENCHMARKS=OFF "$@" >"$out/configure-$san.log" 2>&1
}
for stage in "${stages[@]}"; do
  case "$stage" in
    asan)
      b=/tmp/argus-asan
      configure "$b" address,undefined && cmake --build "$b" -j "$(nproc)" -- -k 0 >"$out/asan-build.log" 2>&1
      echo "asan build: exit $? ($(since))"; grep -E "error" "$out/asan-build.log" | head -20
      (cd "$b" && timeout 420 ctest -LE gpu -j "$(nproc)" --timeout 300 --output-on-failure \
        >"$out/asan-ctest.log" 2>&1)
      echo "asan ctest -LE gpu: exit $? ($(since))"
      grep -E "tests passed|\*\*\*|Failed|runtime error|ERROR: AddressSanitizer|LeakSanitizer" \
        "$out/asan-ctest.log" | head -40 ;;
    tsan)
      b=/tmp/argus-tsan
      rm -rf "$b"
      configure "$b" thread -DARGUS_BUILD_EXAMPLES=ON &&
        cmake --build "$b" -j "$(nproc)" --target argus_runtime_tests argus_workspace_tests \
          argus_session_tests >"$out/tsan-build.log" 2>&1
      echo "tsan build: exit $? ($(since))"; grep -E "error" "$out/tsan-build.log" | head -5
      for t in argus_runtime_tests argus_workspace_tests argus_session_tests; do
        exe=$(find "$b/src" -name "$t" -type f | head -1)
        timeout 300 "$exe" --gtest_brief=1 >"$out/tsan-$t.log" 2>&1
        echo "tsan $t: exit $? ($(since))"
        grep -E "WARNING: ThreadSanitizer|FAILED|PASSED" "$out/tsan-$t.log" | head -8
      done ;;
    *) echo "sanitizer-check.sh: unknown stage $stage (asan, tsan)" >&2 ;;
  esac
done
