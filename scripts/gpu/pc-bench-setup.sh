# Sourced ON the GPU machine by the bench/pc_overhead experiments (mapping-cost.sh,
# experiments/cupti-collectors/sass-granularity.sh): `source scripts/gpu/pc-bench-setup.sh WORKDIR`. Builds the bench and the
# CUPTI collector (the build log goes to $out/build.log) and sets $out, $exe, $lib and $work
# (WORKDIR, emptied).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
gpu_build build.log argus_bench_pc_overhead argus_cupti_sass
exe="$B/bench/pc_overhead/argus_bench_pc_overhead"
lib="$B/src/backends/cupti_sass/libargus_cupti_sass.so"
work=$1
rm -rf "$work"; mkdir -p "$work"
