# Sourced by the scripts that run ON the GPU machine (carry .debs): `source scripts/gpu/lib.sh`.
#   gpu_setup [OUTDIR]          $out is OUTDIR, else $OUT, else /tmp/argus-out (created); CUDA's
#                               bin goes on PATH and the carried .debs' libraries (unpacked by
#                               device-build.sh) on LD_LIBRARY_PATH.
#   gpu_build LOG [TARGET...]   builds the targets (all when none) with device-build.sh, its
#                               output in $out/LOG, and sets $B to the build folder
#                               ($ARGUS_BUILD_DIR, else /tmp/argus-build); on failure prints the
#                               log's last 30 lines and exits 1.
gpu_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

gpu_setup() {
  out="${1:-${OUT:-/tmp/argus-out}}"
  mkdir -p "$out"
  export PATH=/usr/local/cuda/bin:$PATH
  export LD_LIBRARY_PATH=/tmp/argus-deps/usr/lib/x86_64-linux-gnu
}

gpu_build() {
  local log="$out/$1"
  shift
  B=$("$gpu_root/scripts/gpu/device-build.sh" "$@" 2>"$log") || { tail -30 "$log"; exit 1; }
}
