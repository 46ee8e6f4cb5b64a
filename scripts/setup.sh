#!/usr/bin/env bash
# Installs what Argus needs on a fresh Debian machine, then configures and builds it.
# Usage: setup.sh [--all]
#   (default)  what scripts/demo.sh runs: the `argus` binary (with the injection libraries it
#              loads), the SASS tool wheels and the Python client; minutes on two cores
#   --all      also the wheels of the benchmarks (scripts/requirements-bench.txt: NCCL for
#              bench/overlap's multi-GPU pipeline, matplotlib for its plots) and every target:
#              tests, benchmarks, examples (scripts/test.sh runs this)
# Idempotent: packages already present are skipped, and the build is incremental.
# The CUDA toolkit (nvcc, ptxas, CUPTI, NVRTC) is expected under /usr/local/cuda; it is not
# installed here because Debian does not ship CUDA 13.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
all=0
case "${1:-}" in
  "") ;;
  --all) all=1 ;;
  *) echo "usage: scripts/setup.sh [--all]" >&2; exit 2 ;;
esac

say() { printf '\033[1msetup:\033[0m %s\n' "$*"; }

debian_packages=(
  cmake ninja-build g++ pkg-config python3 python3-venv clang-format
  nlohmann-json3-dev libcli11-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev libsqlite3-dev libzstd-dev libxxhash-dev libvalijson-dev
)
source "$root/scripts/lib/debian.sh"
ensure_debian_packages setup "${debian_packages[@]}"
# --all (the test suite): Chromium, for the HTML report's browser test (python/tests/test_html.py
# renders a report headless and reads the DOM back).
if ((all)); then ensure_debian_packages "setup (browser test)" chromium; fi
# --all: a one-node Slurm cluster for the runtime's Slurm tests (tests/slurm/local_cluster.sh
# starts it in a temporary folder and stops it; nothing is started here).
if ((all)); then
  ensure_debian_packages "setup (Slurm tests)" munge slurmctld slurmd slurm-client
fi

# CUDA toolkit: required for the examples and for every PTX pass check (ptxas).
export PATH="/usr/local/cuda/bin:$PATH"
if ! command -v nvcc >/dev/null; then
  echo "setup: nvcc not found; install the CUDA 13 toolkit under /usr/local/cuda and run again" >&2
  exit 1
fi

# Python tools: nvdisasm and cuobjdump come as PyPI wheels, so a machine without the full
# toolkit (CI) can still read SASS; the benchmarks' wheels come with --all. They live in a
# project-local virtual environment.
venv="$root/.venv"
if [ ! -x "$venv/bin/python" ]; then
  say "creating $venv"
  python3 -m venv "$venv"
fi
# install_wheels FILE STAMP: pip-installs FILE unless STAMP holds the same list; sets
# `installed` to 1 when it installed.
install_wheels() {
  local file="$1" stamp="$2"
  installed=0
  if cmp -s "$file" "$stamp"; then
    say "Python wheels of ${file#"$root"/} present"
    return
  fi
  say "installing Python wheels from ${file#"$root"/}"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$file"
  cp "$file" "$stamp"
  installed=1
}
install_wheels "$root/scripts/requirements.txt" "$venv/.argus-requirements"
bench_wheels=0
if ((all)); then
  install_wheels "$root/scripts/requirements-bench.txt" "$venv/.argus-requirements-bench"
  bench_wheels=$installed
fi
# CUTLASS's C++ sources for examples/cutlass_hopper: the nvidia-cutlass wheel ships them under
# cutlass_library/source/. Installed with --no-deps (its Python generator's dependencies,
# cuda-python, numpy, scipy, networkx, pydot and treelib, are not needed for the headers, and a
# requirements file cannot say --no-deps for one line), and linked at .venv/cutlass, the path
# the specs' include_dirs name.
cutlass_wheel="nvidia-cutlass==4.2.0.0"
if [ "$(cat "$venv/.argus-cutlass" 2>/dev/null)" != "$cutlass_wheel" ]; then
  say "installing $cutlass_wheel (its C++ sources; without dependencies)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$cutlass_wheel"
  echo "$cutlass_wheel" >"$venv/.argus-cutlass"
fi
cutlass_source="$("$venv/bin/python" -c 'import importlib.util, os
spec = importlib.util.find_spec("cutlass_library")  # finds without importing
print(os.path.join(spec.submodule_search_locations[0], "source") if spec else "")')"
if [ ! -d "$cutlass_source/include/cutlass" ]; then
  echo "setup: the nvidia-cutlass wheel's sources are missing; remove $venv/.argus-cutlass and run again" >&2
  exit 1
fi
ln -sfn "$cutlass_source" "$venv/cutlass"
# Triton kernels of PyPI packages for examples/triton_packages: liger-kernel's and geak-eval's
# (TritonBench-G) kernel files, without dependencies (they run where torch and Triton are, the
# GPU machine; geak-eval pins an older Triton and tools the kernels do not use).
triton_wheels="liger-kernel==0.8.5 geak-eval==0.1.5"
if [ "$(cat "$venv/.argus-triton-packages" 2>/dev/null)" != "$triton_wheels" ]; then
  say "installing $triton_wheels (their Triton kernels; without dependencies)"
  # shellcheck disable=SC2086 # two requirement words
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps $triton_wheels
  echo "$triton_wheels" >"$venv/.argus-triton-packages"
fi

# The Python client (python/argus), editable, so `import argus` in the venv drives this checkout.
# Installed while the build runs: pip mostly waits on the network (fetching setuptools for the
# build), the build on the CPU.
client=""
if ! "$venv/bin/python" -c "import argus" 2>/dev/null; then
  say "installing the Python client (python/argus) into $venv, beside the build"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e "$root/python" &
  client=$!
else
  say "Python client present"
fi

build="${ARGUS_BUILD_DIR:-$root/build}"
# Configured once, with line tables (-g1) rather than full debug information: file:line in
# backtraces and profiles, and about a third less compile time than -g (scripts/setup.sh's
# first build is what a newcomer waits for). Configure by hand for full -g.
# Configured again when the bench wheels arrive, since CMake looks for NCCL when it configures.
if [ ! -f "$build/build.ninja" ]; then
  say "configuring $build"
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG" >/dev/null
elif ((bench_wheels)); then
  say "configuring $build again (NCCL)"
  cmake -S "$root" -B "$build" >/dev/null
fi
if ((all)); then
  say "building every target: tests, benchmarks, examples (a while the first time)"
  cmake --build "$build" -j "$(nproc)"
else
  # demo.sh builds the three examples it runs itself, and only where there is a GPU.
  say "building argus (a few minutes the first time; scripts/test.sh builds the rest)"
  cmake --build "$build" -j "$(nproc)" --target argus
fi
if [ -n "$client" ] && ! wait "$client"; then
  echo "setup: installing the Python client (pip install -e python) failed; see above" >&2
  exit 1
fi
say "done: $build/argus"
