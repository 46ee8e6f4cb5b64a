#!/usr/bin/env python3
"""Moves the seed kernels' loops in the code without changing what they compute (issue 5: how
much of a measured "overhead" is only where ptxas placed the loop).

    placement_edits.py KERNEL.ptx PAD > EDITED.ptx

Inserts PAD blocks at the start of every `.entry` of a seed kernel build (trace-free or traced),
before its first instruction. Each block stores a %clock read through the kernel's first
pointer parameter under a predicate that is false at run time (the pointer equal to 1) but that
ptxas cannot decide, so it keeps the block: SASS instructions that run once per thread and shift
every later instruction, the FMA loop among them, by their size (ptxas 13.0: 6 for the first
block, which also loads and compares the pointer, 3 for each further one; PAD 1..8 reach every
16-byte offset in a 128-byte line). The kernels' results are unchanged and their loops nearly
so (registers renamed; in the trace-free seed_memory from PAD 3 on one HFMA2.MMA in the loop
becomes an IMAD.MOV); check with cuobjdump -sass.

Measured with experiments/trace-overhead/placement-experiment.sh ($PADS): the spread of the trace-free
kernel's duration over paddings is the resolution of any overhead figure taken against one
trace-free build.
"""
import re
import sys

ENTRY = re.compile(r'^\.visible \.entry (\w+)\(')


def pad(lines, count):
    out = []
    kernel = None
    in_params = False
    inserted = False
    for line in lines:
        t = line.strip()
        m = ENTRY.match(t)
        if m:
            kernel, in_params, inserted = m.group(1), True, False
        elif in_params and t == ')':
            in_params = False
        elif (kernel and not in_params and not inserted and t and not t.startswith(
                ('.', '{', '//')) and not t.endswith(':')):
            # The first instruction of the body: the padding goes before it.
            out += ['\t.reg .b64 %pad_p;', '\t.reg .b32 %pad_c;', '\t.reg .pred %pad_q;',
                    f'\tld.param.u64 %pad_p, [{kernel}_param_0];',
                    '\tsetp.eq.u64 %pad_q, %pad_p, 1;']
            for k in range(count):
                out += ['\tmov.u32 %pad_c, %clock;',
                        f'\t@%pad_q st.global.u32 [%pad_p+{4 * k}], %pad_c;']
            inserted = True
        out.append(line)
    return out


def main():
    if len(sys.argv) != 3 or not sys.argv[2].isdigit():
        sys.exit('usage: placement_edits.py KERNEL.ptx PAD (PAD: blocks to insert, 0 or more)')
    text = open(sys.argv[1]).read()
    if '.entry' not in text:
        sys.exit('placement_edits.py: no .entry in the input')
    print('\n'.join(pad(text.split('\n'), int(sys.argv[2]))))


if __name__ == '__main__':
    main()
