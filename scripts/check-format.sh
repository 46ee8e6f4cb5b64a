#!/usr/bin/env bash
# Fails when any C++/CUDA file tracked by git (or about to be) differs from .clang-format.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mapfile -t files < <(git ls-files --cached --others --exclude-standard \
  '*.h' '*.hpp' '*.cpp' '*.cc' '*.cu' '*.cuh' | grep -v '^tests/data/' || true)
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
if ((${#existing[@]} == 0)); then echo "check-format: no files"; exit 1; fi
if clang-format --dry-run --Werror "${existing[@]}"; then
  echo "check-format: ${#existing[@]} files formatted"
else
  echo "check-format: run 'clang-format -i' on the files above" >&2
  exit 1
fi
