# Sourced ON the GPU machine by the bench/pc_overhead experiments (mapping-cost.sh,
# sass-granularity.sh): `source scripts/gpu/pc-bench-setup.sh WORKDIR`. Builds the bench and the
# CUPTI collector (the build log goes to $out/build.log) and sets $out, $exe, $lib and $work
# (WORKDIR, emptied).
out="${OUT:-/tmp/argus-out}"
mkdir -p "$out"
export PATH=/usr/local/cuda/bin:$PATH
export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
B=$(scripts/gpu/device-build.sh argus_bench_pc_overhead argus_cupti_sass 2>"$out/build.log") ||
  { tail -30 "$out/build.log"; exit 1; }
exe="$B/bench/pc_overhead/argus_bench_pc_overhead"
lib="$B/src/backends/cupti_sass/libargus_cupti_sass.so"
work=$1
rm -rf "$work"; mkdir -p "$work"
