#!/usr/bin/env python3
"""Which instructions wait for a store to read its registers (issue 5's tracing cost, on SASS).

A store (STG, STS, ...) reads its address and data registers after it issues and sets a
register-read barrier; the next instruction that overwrites one of those registers waits on that
barrier, and the warp, issuing in order, waits with it. Usage:

    sass_waits.py CUBIN [KERNEL...]
    sass_waits.py --loops CUBIN [KERNEL...]

prints, per kernel, every store that sets a read barrier and, on each control-flow path from it
(branches followed both ways, so a loop's next trip is one path), the first instruction that
waits on it, with the distance in executed instructions; then a count. The control bits are read from
the encodings cuobjdump prints (Volta and later: the top 23 bits of each 128-bit instruction:
stall count, yield, write barrier, read barrier, wait mask). With --loops it prints instead,
per kernel, every loop's first and last address and the first's offset in a 128-byte line
(`KERNEL FIRST LAST OFFSET`, the shortest loop first): the placements
experiments/trace-overhead/placement-experiment.sh matches trace-free and traced builds by. cuobjdump comes from $ARGUS_CUOBJDUMP, PATH,
/usr/local/cuda/bin or the project's .venv (scripts/requirements.txt). No GPU needed: compare a
variant's SASS with the trace-free build's before measuring it.
"""
import collections
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


# A branch: its guard (group 1), a predicate operand (group 2: `BRA.U !UP0, 0x...`, also
# conditional) or a register one (`BRA.DIV UR4, 0x...`), and its target (group 3).
BRANCH = re.compile(r"(@!?U?P(?:\d+|T)\s+)?BRA(?:\.[A-Z.]+)?\s+(!?U?P(?:\d+|T),\s*)?"
                    r"(?:U?R\d+,\s*)?(0x[0-9a-f]+)")
LIMIT = 256  # executed instructions followed from a store


def waiters(code, at, barrier):
    """The instructions that wait on `barrier` first on some control-flow path from code[at], each
    with the fewest executed instructions from the store to it: [(distance, instruction)],
    nearest first. Paths follow branches (both ways when predicated), so a loop's back edge leads
    to the waiter at its top; a wait ends its path (the barrier is then clear)."""
    index = {c[0]: k for k, c in enumerate(code)}
    found = []
    distance = {at + 1: 1}
    queue = collections.deque([at + 1])
    while queue:  # breadth first: every instruction is reached first by a shortest path
        k = queue.popleft()
        if k >= len(code) or distance[k] > LIMIT:
            continue
        c = code[k]
        if c[4] >> barrier & 1:
            found.append((distance[k], c))
            continue
        text = c[5]
        if text.startswith(("EXIT", "RET")):
            continue
        following = []
        branch = BRANCH.match(text)
        if branch:
            target = index.get(int(branch.group(3), 16))
            if target is not None:
                following.append(target)
            if branch.group(1) or branch.group(2):  # conditional: it may also fall through
                following.append(k + 1)
        else:
            following.append(k + 1)
        for n in following:
            if n not in distance:
                distance[n] = distance[k] + 1
                queue.append(n)
    return sorted(found, key=lambda w: (w[0], w[1][0]))


def loops(code):
    """[(first, last)] of every loop, a backward branch's target and the branch itself, shortest
    first. For the seed kernels the first is the inner FMA or load loop and the last the
    occurrence loop; a loop's offset within a 128-byte line (first % 128) is its placement."""
    found = []
    for addr, *_, text in code:
        branch = BRANCH.match(text)
        if branch and int(branch.group(3), 16) < addr:
            found.append((addr - int(branch.group(3), 16), int(branch.group(3), 16), addr))
    return [(first, last) for _, first, last in sorted(found)]


def main():
    args = sys.argv[1:]
    list_loops = args[:1] == ["--loops"]
    if list_loops:
        args = args[1:]
    if not args:
        sys.exit(__doc__)
    kernels = instructions(args[0])
    wanted = args[1:] or list(kernels)
    for name in wanted:
        code = kernels.get(name)
        if code is None:
            sys.exit(f"sass_waits.py: no kernel {name} (it has {', '.join(kernels)})")
        if list_loops:
            for first, last in loops(code):
                print(f"{name} {first:#06x} {last:#06x} {first % 128}")
            continue
        waits = 0
        print(f"{name}: {len(code)} instructions")
        for at, (addr, _, _, rb, _, text) in enumerate(code):
            if rb == 7 or not re.match(r"(@!?U?P\d+\s+)?ST[GSL]?\b|(@!?U?P\d+\s+)?ST\.", text):
                continue
            found = waiters(code, at, rb)
            if not found:
                print(f"  {addr:04x} {text}\n        read barrier {rb}: nothing waits on it")
                continue
            waits += 1
            print(f"  {addr:04x} {text}")
            for distance, c in found:
                print(f"        read barrier {rb}: waited on {distance} instruction(s) later by "
                      f"{c[0]:04x} {c[5]}")
        print(f"  {waits} store(s) with an instruction waiting on their register reads")


if __name__ == "__main__":
    main()
