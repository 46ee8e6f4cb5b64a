#!/usr/bin/env bash
# Downloads the Debian packages Argus builds against into .debs/ (git-ignored), so that a GPU
# machine without package registries can build Argus: carry .debs and run device-build.sh there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mkdir -p "$root/.debs"
cd "$root/.debs"
apt-get download nlohmann-json3-dev libcli11-dev libfmt-dev libfmt9 libgtest-dev \
  libbenchmark-dev libbenchmark1debian libxxhash-dev libxxhash0 libsqlite3-dev libsqlite3-0 libzstd-dev libzstd1 libyaml-cpp-dev libyaml-cpp0.7 libvalijson-dev 2>&1 | grep -v '^W: Download is performed unsandboxed' || true
ls -1 "$root/.debs"
