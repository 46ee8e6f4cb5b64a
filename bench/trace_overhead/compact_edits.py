#!/usr/bin/env python3
"""Edits of the trace pass's record_layout=compact PTX (issue 5: which part of it costs).

    compact_edits.py COMPACT.ptx EDIT[+EDIT...] > EDITED.ptx

The input is a seed kernel built with `argus build --variant full_trace --pass-option
record_layout=compact` (bench/trace_overhead/argus.yaml; one region per kernel). The edits are
for timing (scripts/gpu/record-layout-experiment.sh variants `compact+EDIT...`), not a pass:

  clamp  the record's place is min(count, 2 cap - 2) (one unsigned min, as late16 in
         record_layout_edits.py) and the store is predicated on tracing being on and the
         leader only, instead of on `count <= 2 cap - 2`: no compare between the end timer read
         and the store, and the begin marker's timer read is no longer predicated. A full slot's
         last record place then holds the newest record (the expansion would have to drop it).
  ne     no election: every lane stores (late16's form). Only correct when every marker is run
         by the whole warp: a marker run by fewer lanes parts the lanes' counters.
  eb     the leader is elected at the begin marker (the active lanes of a region's begin are
         those of its end) into a predicate of the region's own, so the end marker's store has
         no fresh predicate to wait for.
"""
import sys

BEGIN_TIMER = '@%argus_ok mov.u32 %argus_h0, %globaltimer_lo;'


def edit(lines, edits):
    out = []
    closing = False  # inside the closing-record code before a ret
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .pred %argus_lead;') and 'eb' in edits:
            out += [line, '\t.reg .pred %argus_lb;']
            continue
        if t == BEGIN_TIMER:
            if 'eb' in edits and 'ne' not in edits:
                out += ['\tactivemask.b32 %argus_t0;', '\telect.sync _|%argus_lb, %argus_t0;']
            out.append('\tmov.u32 %argus_h0, %globaltimer_lo;' if 'clamp' in edits else line)
            continue
        if t == 'setp.le.s32 %argus_ok, %argus_cnt, %argus_l16;' and 'clamp' in edits and out \
                and out[-1].strip().startswith('mov.u32 %argus_e,'):
            continue  # the end marker's fits-compare
        if t.startswith('@%argus_ok mov.u32 %argus_') and 'clamp' in edits:
            out.append(line.replace('@%argus_ok', '@%argus_on'))
            continue
        if t == 'and.pred %argus_st, %argus_ok, %argus_lead;':  # the end marker's store predicate
            fits = '%argus_on' if 'clamp' in edits else '%argus_ok'
            if 'ne' in edits:
                out.append(f'\tmov.pred %argus_st, {fits};')
            elif 'eb' in edits:
                out.append(f'\tand.pred %argus_st, {fits}, %argus_lb;')
            else:
                out.append(f'\tand.pred %argus_st, {fits}, %argus_lead;')
            continue
        if 'closing record' in t:
            closing = True
        elif t == 'ret;':
            closing = False
        if t.startswith(('activemask.b32', 'elect.sync')) and not closing \
                and ('ne' in edits or 'eb' in edits):
            continue  # the end marker's election (the closing record keeps its own)
        if t == 'mad.wide.u32 %argus_addr, %argus_cnt, 16, %argus_base;' and 'clamp' in edits:
            out += ['\tmin.u32 %argus_t1, %argus_cnt, %argus_l16;',
                    '\tmad.wide.u32 %argus_addr, %argus_t1, 16, %argus_base;']
            continue
        out.append(line)
    return out


def main():
    text, spec = open(sys.argv[1]).read(), sys.argv[2]
    edits = set(spec.split('+'))
    unknown = edits - {'clamp', 'ne', 'eb'}
    if unknown:
        sys.exit(f'compact_edits.py: unknown edit(s) {sorted(unknown)}; known: clamp, ne, eb')
    if BEGIN_TIMER not in text:
        sys.exit('compact_edits.py: not a compact-layout trace of the seed kernels')
    print('\n'.join(edit(text.split('\n'), edits)))


if __name__ == '__main__':
    main()
