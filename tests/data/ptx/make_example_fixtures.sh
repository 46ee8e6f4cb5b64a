#!/usr/bin/env bash
# Regenerates tests/data/ptx/examples_<name>.ptx from each CUDA example kernel
# (examples/<name>/kernel.cu) with markers active and -lineinfo, and rewrites this script's
# section of tests/data/ptx/README.md (between the examples-fixtures comments) with the nvcc
# version used. Run from anywhere; NVCC overrides the compiler (default: nvcc on PATH, else
# /usr/local/cuda/bin/nvcc).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
examples=(callee_regions cp_async_pipeline nested_regions shared_callee tma_gemm warp_specialized)
max_bytes=$((2 * 1024 * 1024))

cd "$root"
rows=""
for name in "${examples[@]}"; do
  out="tests/data/ptx/examples_${name}.ptx"
  "$nvcc" -std=c++17 -O3 -arch=sm_90a -ptx -lineinfo -Iinclude -Iexamples/common \
    "-Iexamples/${name}" "examples/${name}/kernel.cu" -o "$out"
  bytes=$(wc -c <"$out")
  if ((bytes > max_bytes)); then
    echo "make_example_fixtures: $out is $bytes bytes (> 2 MiB); shrink the example" >&2
    exit 1
  fi
  markers=$(grep -c '// @argus ' "$out" || true)
  if ((markers == 0)); then
    echo "make_example_fixtures: $out has no region markers" >&2
    exit 1
  fi
  entries=$(grep -E '^\.(visible|weak) \.entry' "$out" | sed -E 's/.*\.entry ([A-Za-z0-9_$]+).*/\1/' |
    paste -sd, -)
  rows+="| \`examples_${name}.ptx\` | \`examples/${name}/kernel.cu\` | ${entries} | ${markers} | ${bytes} |"$'\n'
  echo "wrote $out ($bytes bytes, $markers marker lines)"
done

version=$("$nvcc" --version | grep -E '^Cuda compilation tools' | sed -E 's/^Cuda compilation tools, //')
section=$(
  cat <<MD
<!-- examples-fixtures:begin (written by make_example_fixtures.sh; edit the script, not this) -->
## CUDA example fixtures (\`examples_*.ptx\`)

Made by \`tests/data/ptx/make_example_fixtures.sh\` from the example kernels under \`examples/\`
(each also has a host driver and an \`argus.yaml\`), with region markers active and line info, by
CUDA 13 \`nvcc\` (${version}), Linux x86_64:

    nvcc -std=c++17 -O3 -arch=sm_90a -ptx -lineinfo -Iinclude -Iexamples/common \\
         -Iexamples/NAME examples/NAME/kernel.cu -o tests/data/ptx/examples_NAME.ptx

run from the repository root. nvcc writes absolute paths into the \`.file\` directives
(\`/work/main/examples/...\` and the toolkit's headers), so a checkout elsewhere regenerates
different \`.file\` lines and otherwise identical PTX.

| file | source | entries | \`@argus\` lines | bytes |
| --- | --- | --- | --- | --- |
${rows}
What each one exercises: \`cp_async_pipeline\` is a 3-stage \`cp.async.cg\` pipeline (16-byte
copies, \`cp.async.commit_group\` per tile, \`cp.async.wait_group 1\` then \`__syncthreads\`) with
the copies of one tile unrolled inside \`mainloop/load\` (\`iter=%rN\`) and in \`prologue\`.
\`nested_regions\` has regions nested four deep inside a loop, role
branches, a region (\`combine\`) entered from both arms of a data-dependent branch and
duplicated by loop unrolling (six \`begin combine\` lines), and a \`__noinline__\` \`.func\`
holding a region (\`transform\`) called from two regions.
\`shared_callee\` is the ownership ground truth: one \`__noinline__\` helper (a \`.func\` with a
runtime trip count) called from regions \`light\` and \`heavy\` with different trip counts, a third
region without calls, every loop \`#pragma unroll 1\` with fixed, warp-uniform trips.
\`tma_gemm\` and \`warp_specialized\` are sm_90a TMA + mbarrier + WGMMA pipelines:
\`cp.async.bulk.tensor.2d...mbarrier::complete_tx::bytes\`, \`mbarrier.try_wait.parity\` in
\`{ .reg .pred p; ... }\` scopes, \`wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16\` with 64
accumulator registers, \`wgmma.fence/commit_group/wait_group\`, \`prefetch.tensormap\`,
\`__grid_constant__\` CUtensorMap parameters, and (\`warp_specialized\`) \`setmaxnreg\`; markers carry
\`iter=%rN\` and \`role=producer|consumer\`. Both GEMMs also have a trap-only body for generic
compute_90 (guarded by \`__CUDA_ARCH_FEAT_SM90_ALL\`), which this compute_90a PTX does not contain.
<!-- examples-fixtures:end -->
MD
)

readme="tests/data/ptx/README.md"
touch "$readme"
python3 - "$readme" "$section" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read()
pattern = re.compile(r"<!-- examples-fixtures:begin.*?<!-- examples-fixtures:end -->", re.S)
if pattern.search(text):
    text = pattern.sub(lambda _: section, text)
else:
    text = text.rstrip("\n") + "\n\n" + section + "\n"
open(path, "w").write(text)
PY
echo "updated the examples section of $readme"
