#!/usr/bin/env bash
# Downloads the Debian packages Argus builds against into .debs/ (git-ignored), so that a GPU
# machine without package registries can build Argus: carry .debs and run device-build.sh there.
# Usage: fetch-deps.sh [--slurm]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$root/.debs"
cd "$root/.debs"
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libgtest-dev \
  libbenchmark-dev libbenchmark1debian libxxhash-dev libxxhash0 libsqlite3-dev libsqlite3-0 libzstd-dev libzstd1 libyaml-cpp-dev libyaml-cpp0.7 libvalijson-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
# --slurm: also Slurm, munge and the libraries they need beyond a base system, into .debs/slurm
# (scripts/gpu/lib.sh's gpu_slurm_setup unpacks them on the GPU machine), for the tests named
# slurm.* there: GPU collections through Slurm on the H200 (docs/slurm.md).
if [ "${1:-}" = --slurm ]; then
  mkdir -p "$root/.debs/slurm"
  (cd "$root/.debs/slurm" && apt-get download munge libmunge2 slurmctld slurmd slurm-client \
    slurm-wlm-basic-plugins libhwloc15 libjson-c5 liblua5.1-0 liblz4-1 libnuma1 libyaml-0-2 \
    2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
fi
ls -1 "$root/.debs"
