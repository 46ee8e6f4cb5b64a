#!/usr/bin/env python3
"""Which instructions wait for a store to read its registers (issue 5's tracing cost, on SASS).

A store (STG, STS, ...) reads its address and data registers after it issues and sets a
register-read barrier; the next instruction that overwrites one of those registers waits on that
barrier, and the warp, issuing in order, waits with it. Usage:

    sass_waits.py CUBIN [KERNEL...]

prints, per kernel, every store that sets a read barrier and the first later instruction that
waits on it (with the distance in instructions), then a count. The control bits are read from
the encodings cuobjdump prints (Volta and later: the top 23 bits of each 128-bit instruction:
stall count, yield, write barrier, read barrier, wait mask). cuobjdump comes from $ARGUS_CUOBJDUMP,
PATH, /usr/local/cuda/bin or the project's .venv (scripts/requirements.txt). No GPU needed:
compare a variant's SASS with the trace-free build's before measuring it.
"""
import glob
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cuobjdump():
    for path in (os.environ.get("ARGUS_CUOBJDUMP"), shutil.which("cuobjdump"),
                 "/usr/local/cuda/bin/cuobjdump",
                 *glob.glob(os.path.join(HERE, "..", "..", ".venv", "lib", "*", "site-packages",
                                         "nvidia", "cu13", "bin", "cuobjdump"))):
        if path and os.access(path, os.X_OK):
            return path
    sys.exit("sass_waits.py: no cuobjdump (set ARGUS_CUOBJDUMP, or run scripts/setup.sh)")


def instructions(cubin):
    """{kernel: [(address, stall, write_barrier, read_barrier, wait_mask, text)]}"""
    text = subprocess.run([cuobjdump(), "-sass", cubin], capture_output=True, text=True,
                          check=True).stdout.split("\n")
    out, kernel = {}, None
    for i, line in enumerate(text):
        if "Function :" in line:
            kernel = line.split("Function :")[1].strip()
            out[kernel] = []
            continue
        m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;?\s*/\* (0x[0-9a-f]+) \*/", line)
        if kernel is None or not m or i + 1 >= len(text):
            continue
        high = re.search(r"/\* (0x[0-9a-f]+) \*/", text[i + 1])
        if not high:
            continue
        ctrl = int(high.group(1), 16) >> 41
        out[kernel].append((int(m.group(1), 16), ctrl & 0xF, (ctrl >> 5) & 7, (ctrl >> 8) & 7,
                            (ctrl >> 11) & 0x3F, m.group(2).strip()))
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    kernels = instructions(sys.argv[1])
    wanted = sys.argv[2:] or list(kernels)
    for name in wanted:
        code = kernels.get(name)
        if code is None:
            sys.exit(f"sass_waits.py: no kernel {name} (it has {', '.join(kernels)})")
        waits = 0
        print(f"{name}: {len(code)} instructions")
        for at, (addr, _, _, rb, _, text) in enumerate(code):
            if rb == 7 or not re.match(r"(@!?U?P\d+\s+)?ST[GSL]?\b|(@!?U?P\d+\s+)?ST\.", text):
                continue
            waiter = next(((k - at, c) for k, c in enumerate(code[at + 1:], at + 1)
                           if c[4] >> rb & 1), None)
            if waiter is None:
                print(f"  {addr:04x} {text}\n        read barrier {rb}: nothing waits on it")
                continue
            waits += 1
            print(f"  {addr:04x} {text}\n        read barrier {rb}: waited on {waiter[0]} "
                  f"instruction(s) later by {waiter[1][0]:04x} {waiter[1][5]}")
        print(f"  {waits} store(s) with an instruction waiting on their register reads")


if __name__ == "__main__":
    main()
