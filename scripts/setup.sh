#!/usr/bin/env bash
# Installs everything Argus needs on a fresh Debian machine, then configures and builds it.
# Idempotent: packages already present are skipped, and the build is incremental.
# The CUDA toolkit (nvcc, ptxas, CUPTI, NVRTC) is expected under /usr/local/cuda; it is not
# installed here because Debian does not ship CUDA 13.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

debian_packages=(
  cmake ninja-build g++ pkg-config python3 python3-venv clang-format
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libsqlite3-dev libzstd-dev libxxhash-dev
)
missing=()
for pkg in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  say "installing Debian packages: ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  say "Debian packages present"
fi

# CUDA toolkit: required for the examples and for every PTX pass check (ptxas).
export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null; then
  echo "setup: nvcc not found; install the CUDA 13 toolkit under /usr/local/cuda and run again" >&2
  exit 1
fi

# Python tools: nvdisasm and cuobjdump come as PyPI wheels, so a machine without the full
# toolkit (CI) can still read SASS. They live in a project-local virtual environment.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  python3 -m venv "$venv"
fi
stamp="$venv/.argus-requirements"
if ! cmp -s "$root/scripts/requirements.txt" "$stamp"; then
  say "installing Python wheels from scripts/requirements.txt"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$root/scripts/requirements.txt"
  cp "$root/scripts/requirements.txt" "$stamp"
else
  say "Python wheels present"
fi

# The Python client (python/argus), editable, so `import argus` in the venv drives this checkout.
if ! "$venv/bin/python" -c "import argus" 2>/dev/null; then
  say "installing the Python client (python/argus) into $venv"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$root/python"
else
  say "Python client present"
fi

build="${ARGUS_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  say "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
fi
say "building (this takes a few minutes the first time)"
cmake --build "$build" -j "$(nproc)"
say "done: $build/argus"
