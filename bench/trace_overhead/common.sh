# Sourced by run.sh and paired.sh, which both take ARGUS OUT.
#
# bench_paths LAST "$@": without exactly two arguments prints lines 2..LAST of the calling script
# (its usage) and exits 2; else sets argus (ARGUS, absolute), out (OUT, made, absolute) and inject
# (find_inject's answer; exits 2 when there is none).
bench_paths() {
  local last="$1"
  shift
  if [ $# -ne 2 ]; then
    sed -n "2,${last}p" "$0"
    exit 2
  fi
  argus="$(realpath "$1")"
  out="$(mkdir -p "$2" && realpath "$2")"
  inject="$(find_inject "$argus")" || exit 2
}

# find_inject ARGUS prints libargus_inject.so's path ($INJECT, else $ARGUS_INJECT_LIB, else looked
# up in the build tree of the argus binary ARGUS), or says it is missing on stderr and returns 2.
find_inject() {
  local inject="${INJECT:-${ARGUS_INJECT_LIB:-}}" bin_dir candidate
  if [ -z "$inject" ]; then
    bin_dir="$(dirname "$1")"
    for candidate in "$bin_dir/src/backends/region_trace/libargus_inject.so" \
                     "$bin_dir/../src/backends/region_trace/libargus_inject.so" \
                     "$bin_dir/../../src/backends/region_trace/libargus_inject.so" \
                     "$bin_dir/libargus_inject.so" "$bin_dir/../lib/libargus_inject.so"; do
      if [ -f "$candidate" ]; then inject="$(realpath "$candidate")"; break; fi
    done
  fi
  if [ -z "$inject" ] || [ ! -f "$inject" ]; then
    echo "libargus_inject.so not found; set INJECT" >&2
    return 2
  fi
  echo "$inject"
}
