# Sourced by the scripts that run ON the GPU machine (carry .debs): `source scripts/gpu/lib.sh`.
#   gpu_setup [OUTDIR]          $out is OUTDIR, else $OUT, else /tmp/argus-out (created); CUDA's
#                               bin goes on PATH and the carried .debs' libraries (unpacked into
#                               /tmp/argus-deps when not there yet) first on LD_LIBRARY_PATH.
#                               $gpu_root is the repository's root.
#   gpu_build LOG [TARGET...]   builds the targets (all when none) with device-build.sh, its
#                               output in $out/LOG, and sets $B to the build folder
#                               ($ARGUS_BUILD_DIR, else /tmp/argus-build); on failure prints the
#                               log's last 30 lines and exits 1.
#   seed_run DIR EXE            runs a seed-kernel harness EXE (bench/trace_overhead) as
#                               bench/trace_overhead/run.sh does: under $B's libargus_inject.so,
#                               kernels $KERNELS (default both), inner 8, 64 and 512, 200 timed
#                               launches after 20 warm-ups; the trace folder is DIR, the
#                               harness's lines go to DIR.jsonl (bench/trace_overhead/summarize.py
#                               reads both).
#   seed_pair DIR EXE CUBIN     the same with the harness's --pair CUBIN: each launch of EXE's
#                               kernels next to one of CUBIN's (the trace-free build's), in
#                               alternating order; bench/trace_overhead/paired.py reads DIR.
#   gpu_slurm_setup             Slurm and munge from the carried .debs/slurm (fetch-deps.sh
#                               --slurm), unpacked into /tmp/argus-slurm: their commands first on
#                               PATH, their libraries on LD_LIBRARY_PATH, ARGUS_SLURM_PLUGIN_DIR
#                               for tests/slurm/local_cluster.sh; slurmd starts slurmstepd from
#                               its compiled-in /usr/sbin/slurmstepd, so that one link is made
#                               there when it is missing.
gpu_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

gpu_setup() {
  out="${1:-${OUT:-/tmp/argus-out}}"
  mkdir -p "$out"
  export PATH=/usr/local/cuda/bin:$PATH
  if [ ! -d /tmp/argus-deps/usr ]; then
    for deb in "$gpu_root"/.debs/*.deb; do dpkg -x "$deb" /tmp/argus-deps; done
  fi
  export LD_LIBRARY_PATH="/tmp/argus-deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

gpu_build() {
  local log="$out/$1"
  shift
  B=$("$gpu_root/scripts/gpu/device-build.sh" "$@" 2>"$log") || { tail -30 "$log"; exit 1; }
}

# seed_harness DIR EXE INNER REPS [HARNESS ARGS...]: the body of seed_run and seed_pair.
seed_harness() {
  CUDA_INJECTION64_PATH="$B/src/backends/region_trace/libargus_inject.so" ARGUS_TRACE_DIR="$1" \
    ARGUS_TRACE_CAPACITY=64 ARGUS_TRACE_MAX_FILES=2 "$2" --kernel "${KERNELS:-both}" \
    --inner "$3" --reps "$4" --warmup 20 "${@:5}" >"$1.jsonl" 2>"$1.err"
}

seed_run() {
  seed_harness "$1" "$2" 8,64,512 200
}

seed_pair() {
  seed_harness "$1" "$2" "${INNER:-8,64,512}" "${REPS:-200}" --pair "$3"
}

gpu_slurm_setup() {
  local prefix=/tmp/argus-slurm
  if [ ! -d "$prefix/usr" ]; then
    ls "$gpu_root"/.debs/slurm/*.deb >/dev/null 2>&1 ||
      { echo "gpu_slurm_setup: no .debs/slurm (run scripts/gpu/fetch-deps.sh --slurm here and carry .debs)" >&2; return 1; }
    for deb in "$gpu_root"/.debs/slurm/*.deb; do dpkg -x "$deb" "$prefix"; done
    # Debian names its daemons through alternatives (slurmd -> slurmd-wlm), made at install.
    for d in slurmctld slurmd slurmstepd; do ln -sf "$d-wlm" "$prefix/usr/sbin/$d"; done
  fi
  [ -e /usr/sbin/slurmstepd ] || ln -s "$prefix/usr/sbin/slurmstepd-wlm" /usr/sbin/slurmstepd
  export PATH="$prefix/usr/sbin:$prefix/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu/slurm-wlm:$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export ARGUS_SLURM_PLUGIN_DIR="$prefix/usr/lib/x86_64-linux-gnu/slurm-wlm"
}
