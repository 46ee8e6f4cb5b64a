#!/usr/bin/env bash
# The hardening checks (docs/hardening.md): the test suite under sanitizers, and fuzzing.
# Usage: hardening.sh [OPTIONS] [STAGE...]        (default stages: asan tsan fuzz)
#   asan   Clang 16 build with AddressSanitizer + UndefinedBehaviorSanitizer (and libFuzzer's
#          coverage) of every target in build-san/, then the whole test suite in it: any memory
#          error, leak or undefined behaviour fails its test
#   tsan   g++ build with ThreadSanitizer in build-tsan/ of the runtime, scheduler, workspace and
#          session tests, then those tests
#   fuzz   every fuzz target of build-san/ (tests/fuzz) for --seconds each, corpora seeded by
#          tests/fuzz/seed_corpus.py; stops at the first crash and names the input
# Options:
#   --seconds N   fuzzing time per target (default 45)
#   --jobs J      parallel fuzzing processes per target (default: the number of cores)
#   --bin DIR     fuzz with the fuzz_* binaries in DIR instead of building (a machine without
#                 Clang; scripts/gpu/fuzz-campaign.sh)
#   --corpus DIR  where corpora grow and crash inputs land (default build-san/fuzz-corpus)
#   --only T,...  fuzz only these targets
# Installs clang-16 and libclang-rt-16-dev (Debian) when missing. CI (.ci/run) runs every stage
# after the test suite.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
say() { printf '\033[1mhardening:\033[0m %s\n' "$*"; }

seconds=45
jobs=$(nproc)
bin=""
corpus=""
only=""
stages=()
while (($#)); do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --bin) bin="$(cd "$2" && pwd)"; shift 2 ;;
    --corpus) corpus="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    asan | tsan | fuzz) stages+=("$1"); shift ;;
    -h | --help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "hardening.sh: unknown argument \`$1\` (stages: asan tsan fuzz; --help)" >&2; exit 2 ;;
  esac
done
((${#stages[@]})) || stages=(asan tsan fuzz)
targets=(ptx regions ttgir scope spec trace evidence workspace)
if [ -n "$only" ]; then IFS=, read -r -a targets <<<"$only"; fi

export PATH="/usr/local/cuda/bin:$PATH"
san="$root/build-san"
tsan="$root/build-tsan"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache
                                          -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
# The instrumented binaries' reports: stop at the first error, with a stack that names lines.
export ASAN_OPTIONS="${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export TSAN_OPTIONS="${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}"
# Clang's symbolizer turns the reports' addresses into function, file and line.
for symbolizer in /usr/lib/llvm-16/bin/llvm-symbolizer /usr/bin/llvm-symbolizer-16; do
  [ -z "${ASAN_SYMBOLIZER_PATH:-}" ] && [ -x "$symbolizer" ] && export ASAN_SYMBOLIZER_PATH="$symbolizer"
done

configure_san() {
  [ -n "$bin" ] && return 0
  source "$root/scripts/lib/debian.sh"
  ensure_debian_packages hardening clang-16 libclang-rt-16-dev llvm-16
  if [ ! -f "$san/build.ninja" ]; then
    say "configuring $san (clang-16, ASan + UBSan, libFuzzer)"
    cmake -S "$root" -B "$san" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DCMAKE_CXX_COMPILER=clang++-16 \
      -DCMAKE_CUDA_HOST_COMPILER=g++ -DARGUS_SANITIZE=address,undefined -DARGUS_FUZZ=ON \
      -DARGUS_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
  fi
}

stage_asan() {
  configure_san
  say "building every target with ASan + UBSan in $san"
  cmake --build "$san" -j "$(nproc)"
  say "running the test suite under ASan + UBSan"
  (cd "$san" && ctest --output-on-failure -j "$(nproc)" --timeout 900)
}

stage_tsan() {
  if [ ! -f "$tsan/build.ninja" ]; then
    say "configuring $tsan (g++, TSan)"
    cmake -S "$root" -B "$tsan" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" -DARGUS_SANITIZE=thread \
      -DARGUS_BUILD_BENCHMARKS=OFF "${launcher[@]}" >/dev/null
  fi
  # The modules with threads: the scheduler and its executors, the workspace under concurrent
  # writers, and the session that drives both.
  local suites=(argus_runtime_tests argus_workspace_tests argus_session_tests)
  say "building ${suites[*]} with TSan in $tsan"
  cmake --build "$tsan" -j "$(nproc)" --target "${suites[@]}"
  say "running them under TSan"
  local suite exe
  for suite in "${suites[@]}"; do
    exe=$(find "$tsan/src" -name "$suite" -type f -perm -u+x | head -1)
    [ -n "$exe" ] || { echo "hardening.sh: $suite was not built in $tsan" >&2; return 1; }
    say "$suite"
    "$exe" --gtest_brief=1
  done
}

stage_fuzz() {
  configure_san
  local dir="$bin"
  if [ -z "$dir" ]; then
    say "building the fuzz targets in $san"
    cmake --build "$san" -j "$(nproc)" --target "${targets[@]/#/fuzz_}"
    dir="$san/tests/fuzz"
  fi
  local base="${corpus:-$san/fuzz-corpus}"
  mkdir -p "$base"
  local summary="$base/summary.tsv" failed=0
  printf 'target\texecutions\tseconds\tjobs\tcrashes\n' >"$summary"
  for t in "${targets[@]}"; do
    local c="$base/$t" log="$base/$t.log"
    mkdir -p "$c" "$base/crashes"
    python3 tests/fuzz/seed_corpus.py "$t" "$c" >/dev/null
    say "fuzzing $t for ${seconds} s with $jobs processes ($(ls "$c" | wc -l) inputs in $c)"
    # -max_len 4096: the seeds are whole kernels; mutations of their first 4 KiB reach every
    # reader's structure at several times the speed of whole files.
    set +e
    "$dir/fuzz_$t" -fork="$jobs" -max_total_time="$seconds" -max_len=4096 -timeout=20 \
      -rss_limit_mb=2048 -artifact_prefix="$base/crashes/$t-" "$c" >"$log" 2>&1
    local rc=$?
    set -e
    local execs
    execs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#')
    local crashes
    crashes=$(ls "$base/crashes" | grep -c "^$t-" || true)
    printf '%s\t%s\t%s\t%s\t%s\n' "$t" "${execs:-0}" "$seconds" "$jobs" "$crashes" >>"$summary"
    if ((rc != 0 || crashes > 0)); then
      failed=1
      say "fuzz_$t FAILED (exit $rc): see $log; inputs in $base/crashes/$t-*."
      say "reproduce: $dir/fuzz_$t INPUT; once fixed, keep INPUT in tests/fuzz/regressions/$t/"
      grep -E 'ERROR|SUMMARY|property failed|deadly|Test unit written' "$log" | head -8 || true
    else
      say "fuzz_$t: ${execs:-0} executions, no crash"
    fi
  done
  column -t "$summary" 2>/dev/null || cat "$summary"
  return $failed
}

for stage in "${stages[@]}"; do
  start=$(date +%s)
  "stage_$stage"
  say "$stage: done in $(($(date +%s) - start)) s"
done
