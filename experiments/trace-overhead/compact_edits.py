#!/usr/bin/env python3
"""Edits of the trace pass's compact-layout PTX (issue 5: what the storing lane costs).

    compact_edits.py COMPACT.ptx EDIT > EDITED.ptx

The input is a seed kernel built with `argus build --variant full_trace --pass-option
record_place=end` (record_layout=compact, the default; bench/trace_overhead/argus.yaml): the
lowering before the twelfth session made record_place=begin the default, which the `placebegin`
edit reproduces. The edits are for timing
(experiments/trace-overhead/record-layout-experiment.sh variants `compact+EDIT`), not a pass:

  all    every active lane stores the record (the store predicated on tracing being on instead
         of lane 0): late16's form (record_layout_edits.py). Only correct while every lane runs
         every marker: where lanes run different markers their counters part, and lanes with a
         lower count overwrite records lane 0 stored.
  redux  every active lane stores, at the highest count of the active lanes (redux.sync.max
         before the place is taken), and all of them continue from it: the lanes' counters meet
         again at every end marker they run together.
  nored  the lowering as it is, without the exits' red.global.max of the highest count.
  nolane every lane stores, and the entry reads no %laneid (%argus_w is %argus_on): against
         `all`, what the entry's special-register read and the code it moves cost.
  tidlane  lane 0 stores, its lane number taken from the linear thread index the entry already
         computes (its low 5 bits) instead of a %laneid read.
  lost   what counting the records lane 0 never sees would cost: at every end marker each lane
         adds 1 to a counter of its own when lane 0 is not among the active lanes (activemask,
         bit 0), and the exits raise the highest-count place's second word to it (red.max): a
         lower bound of the occurrences run without lane 0, also for lanes that ran as many
         markers as lane 0 but other ones.
  noclose  no closing record at the exits (the red.max kept, and since commit 10d64c7 the
         store of the last record's pending second half): what lane 0's store at the exit,
         whose draining the kernel's end waits for, costs. The records then do not decode.
  noexit   neither the closing record nor the red.max (nor the pending second half's store):
         all the exits' trace work. This one and `noclose` and `nored` also apply to today's
         lowering.
  placebegin  the record's place (clamp, address, count) taken at the begin marker instead of
         the end: off the end marker's path to its store, while the warp waits for the
         occurrence's first operands anyway. Same records for these kernels (one region, not
         nested); in general a nested region's end would then take a later place than its
         parent's begin claimed.
  begin  placebegin, and the begin timestamp and iteration read straight into the store's data
         registers (no predicated copies at the end marker): only right where regions do not
         nest, as here.

The edits above are of the lowering as of commit 1db3ecc (the place a clamped count and a 64-bit
multiply-add); since then the place is the low 32 bits of its address, advanced and clamped in one
step (`add`/`min` on %argus_plo), and they refuse today's lowering: check that commit out to run
them again. The edits below are of the default build (`argus build --variant full_trace`,
record_place=begin) as of commit 6aef161, before the halves order (format.h kLayoutHalves, which
`split` measured and the pass has lowered since); `eon`, `direct`, `split` and `lazy` refuse
today's lowering (they need the end marker's copies), the others apply to both:

  wide   the place as before the windowed addressing: min(count, last place) and a 64-bit
         multiply-add from the slot's base (3 SASS instructions at sm_90 where the windowed place
         has 1), everything else unchanged: what the windowed addressing saves.
  tidx   the entry's linear thread and CTA indices taken as %tid.x and %ctaid.x alone, as a
         lowering could when the spec gives a one-dimensional block (and the grid is too): 12
         fewer SASS instructions at the entry of each seed kernel (46 to 34 before the first
         begin marker; ptxas 13.0), the loop unchanged. Records decode right only for launches
         with y and z extents 1, as the seed's are.
  eon    the end marker's timer read predicated on tracing being on, as the iteration copy is:
         ptxas then keeps the end timestamp's register live around the occurrence loop and gives
         the program's loop-bound reload another one (one more SASS instruction per occurrence,
         a select); it still waits for the record store's register reads, since ptxas gives its
         load the store's scoreboard.
  direct the begin timestamp and the iteration read straight into the store's data registers
         (both predicated on tracing being on), without the end marker's two copies: 2 fewer
         SASS instructions per occurrence, and the next begin marker's iteration copy waits for
         the store's register reads 2 instructions after it (the loop-bound reload 4 after, as
         in the default build).
  defer  (of the halves lowering as of commit 3d80b0b) each leaf record's second half, {end,
         meta}, stored at the next begin marker, right after it takes its place, at the place's
         address - 8, and at the exits before the closing record, instead of at the end marker,
         whose path is then its timer read alone: the program's loop-bound reload no longer waits
         for that store's register reads. Records go from place 1 up; place 0's second half takes
         the first begin's store (timing only: the counts stay in place 2 cap - 2, so the
         records do not decode). Measured (experiments/HISTORY.md, seventeenth session) and the lowering
         since (format.h kLayoutCountFirst), which this edit refuses.
  entryonly  no marker code in the occurrence loop (no timer reads, place, count or record
         store), the entry and the exits' closing work kept: with `noexit` and the default build,
         it splits the added time into entry, occurrences and exits. Records do not decode.
  late   the entry's work on the trace symbol's words (its first consumers: the slot's address,
         the meta words, the predicates) moved from the entry to just before each exit's closing
         record, the load itself left at the entry: with `entryonly` (`entryonly+late`,
         record-layout-experiment.sh chains edits), what the entry costs the warp before its
         first occurrence, the load's latency with it. Only for entryonly: the markers need it.
  lazy   the warp waits for the trace symbol's words at its first end marker, not at the entry:
         the entry only issues the load; the begin markers advance a place offset (which is also
         the record count) and copy under a lane-0 predicate, neither of which needs the
         symbol; each end marker branches once, the first time, to a block after `ret` that
         computes the slot's place, its last place and the store predicates from the symbol,
         and then takes its place as min(slot start + offset, last place). The exit does the
         same before the closing record if no end marker ran. One more SASS instruction per
         occurrence (ptxas 13 lays the block out inline and branches over it) for the load's
         latency off the warp's path; the symbol is read as two 8-byte words. Seed kernels only
         (one leaf region, one end marker and one exit per kernel).
  split  each record stored in two 8-byte halves at the markers that know them: {begin
         timestamp, iteration} at the begin marker, right after the place is taken (where the
         warp waits for the program's loop-bound reload anyway), {end timestamp, meta} at the
         end marker, without the end marker's copies (the begin half reads the begin timestamp
         and the iteration copy before the next begin marker rewrites them). 1 SASS instruction
         fewer per occurrence and 4 static stall cycles fewer on the end marker's path than the
         default (ptxas 13). The halves are in {begin, iteration, end, meta} order, which the
         injection library does not read: timing only.
  constload  the trace symbol read as a constant operand (ld.const, a uniform-datapath load at
         sm_90 that stops the warp until a constant-cache miss is served) instead of through its
         generic address (an asynchronous load): what the generic read saves at the entry.

Measured before (2026-11-30, on the lowering of commit 2e5b3cd, which elected the storing lane
and compared the count with the slot's last place before the store): `clamp` (the place clamped
instead of compared), `ne` (no election: every lane stores), `eb` (election at the begin marker);
experiments/HISTORY.md has their figures.
"""
import sys

STORE = '@%argus_w st.global.cs.v4.u32 [%argus_addr], {'
PLACE = 'min.u32 %argus_t1, %argus_cnt, %argus_l16;'


LINEAR_INDICES = (
    'mov.u32 %argus_t1, %tid.z;', 'mov.u32 %argus_t2, %ntid.y;', 'mov.u32 %argus_t3, %tid.y;',
    'mad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;', 'mov.u32 %argus_t2, %ntid.x;',
    'mov.u32 %argus_t3, %tid.x;', 'mad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;',
    'shr.u32 %argus_warp, %argus_t1, 5;', 'mov.u32 %argus_t1, %ctaid.z;',
    'mov.u32 %argus_t2, %nctaid.y;', 'mov.u32 %argus_t3, %ctaid.y;',
    'mad.lo.u32 %argus_t1, %argus_t1, %argus_t2, %argus_t3;', 'mov.u32 %argus_t2, %nctaid.x;',
    'mov.u32 %argus_t3, %ctaid.x;', 'mad.lo.u32 %argus_cta, %argus_t1, %argus_t2, %argus_t3;')
WINDOWED_PLACE = ('add.u32 %argus_plo, %argus_plo, 16;',
                  'min.u32 %argus_plo, %argus_plo, %argus_plast;',
                  'mov.b64 %argus_addr, {%argus_plo, %argus_ph};')
END_HALF = '@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_e, %argus_m0};'
GENERIC_LOAD = 'ld.v2.u64 {%argus_hdr, %argus_x}, [%argus_x];'
PLACE_LINES = (PLACE, 'mad.wide.u32 %argus_addr, %argus_t1, 16, %argus_base;',
               'add.u32 %argus_cnt, %argus_cnt, 1;')
BEGIN_TIME = 'mov.u32 %argus_h0, %globaltimer_lo;'
END_TIME = 'mov.u32 %argus_e, %globaltimer_lo;'
COPIES = ('@%argus_on mov.u32 %argus_bs, %argus_h0;', '@%argus_on mov.u32 %argus_ic, %argus_i0;')


LANE_READ = 'mov.u32 %argus_t1, %laneid;'
LANE_ZERO = 'setp.eq.and.u32 %argus_w, %argus_t1, 0, %argus_on;'
WARP_ID = 'shr.u32 %argus_warp, %argus_t1, 5;'  # %argus_t1: the linear thread index here


def edit(lines, what):
    out = []
    marker = False  # entryonly: inside a marker's lines
    moving, held = None, []  # late: the entry lines being moved, those of each kernel so far
    for line in lines:
        t = line.strip()
        if what == 'tidx':
            if t == LINEAR_INDICES[0]:
                out += ['\tmov.u32 %argus_t1, %tid.x;', '\tshr.u32 %argus_warp, %argus_t1, 5;',
                        '\tmov.u32 %argus_cta, %ctaid.x;']
            if t not in LINEAR_INDICES:
                out.append(line)
            continue
        if what == 'constload':
            if t.startswith('cvta.const.u64 %argus_x') or t.startswith('mov.u64 %argus_x, __argus'):
                continue
            if t == GENERIC_LOAD:
                line = '\tld.const.v2.u64 {%argus_hdr, %argus_x}, [__argus_trace];'
            out.append(line)
            continue
        if what == 'entryonly':
            if t.startswith('// argus trace: begin ') or t.startswith('// argus trace: end '):
                marker = True
                continue
            if marker and '%argus_' in t:
                continue
            marker = False
            out.append(line)
            continue
        if what == 'late':
            if t == GENERIC_LOAD:
                moving = []
                out.append(line)
                continue
            if moving is not None and not t.startswith('.reg'):
                moving.append(line)
                if t == LANE_ZERO:
                    held.append(moving)
                    moving = None
                continue
            if t == '// argus trace: closing record':
                out += held[-1]
            out.append(line)
            continue
        if what == 'split':
            if t in COPIES:
                continue
            if t.startswith(STORE + '%argus_bs'):
                line = '\t@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_e, %argus_m0};'
            out.append(line)
            if t == WINDOWED_PLACE[2]:
                out.append('\t@%argus_w st.global.cs.v2.u32 [%argus_addr], {%argus_h0, %argus_i0};')
            continue
        if what == 'defer':
            if t == END_HALF:
                continue
            if t == 'sub.u32 %argus_plo, %argus_plo, 16;':
                line = '\tmov.u32 %argus_e, 0;'
            out.append(line)
            if t == WINDOWED_PLACE[2]:
                out.append('\t' + END_HALF.replace('+8]', '+-8]'))
            if t == '// argus trace: closing record':
                out.append('\t' + END_HALF)
            continue
        if what == 'eon':
            if t == END_TIME:
                line = line.replace(END_TIME, '@%argus_on ' + END_TIME)
            out.append(line)
            continue
        if what == 'direct':
            if t in COPIES:
                continue
            if t == BEGIN_TIME:
                line = '\t@%argus_on mov.u32 %argus_bs, %globaltimer_lo;'
            elif t.startswith('@%argus_on mov.b32 %argus_i0, '):
                line = line.replace('%argus_i0', '%argus_ic')
            out.append(line)
            continue
        if what == 'wide':
            if t == WINDOWED_PLACE[0]:
                out += ['\t' + p for p in PLACE_LINES[:2]]
            if t not in WINDOWED_PLACE:
                out.append(line)
            continue
        if what in ('placebegin', 'begin'):
            if t in PLACE_LINES or (what == 'begin' and t in COPIES):
                continue
            if t == BEGIN_TIME:
                if what == 'begin':
                    line = line.replace('%argus_h0', '%argus_bs')
                out += [line] + ['\t' + p for p in PLACE_LINES]
                continue
            # The iteration copy, predicated on %argus_on since the twelfth session's lowering.
            if what == 'begin' and t.removeprefix('@%argus_on ').startswith('mov.b32 %argus_i0, '):
                line = line.replace('%argus_i0', '%argus_ic')
        if t.startswith(STORE) and what in ('all', 'redux'):
            line = line.replace('@%argus_w ', '@%argus_on ')
        elif t == LANE_READ and what in ('nolane', 'tidlane'):
            continue
        elif t == LANE_ZERO and what == 'nolane':
            line = '\tmov.pred %argus_w, %argus_on;'
        elif t == LANE_ZERO and what == 'tidlane':
            out.append('\tand.b32 %argus_t1, %argus_tl, 31;')
        elif t == WARP_ID and what == 'tidlane':
            out += ['\t.reg .b32 %argus_tl;', '\tmov.u32 %argus_tl, %argus_t1;']
        elif t.startswith('@%argus_on red.global.max.u32 [%argus_') and what in ('nored', 'noexit'):
            continue
        elif t.startswith(('@%argus_w st.global.cs.v4.u32 [%argus_addr+16]',
                           '@%argus_w st.global.cs.v4.u32 [%argus_ca+16]')) and what in (
                'noclose', 'noexit'):
            continue
        elif (what == 'noexit' and out and out[-1].strip() == '// argus trace: closing record'
              and t.startswith('@%argus_w st.global.cs.v2.u32 [%argus_addr+8], {%argus_pe')):
            continue
        elif t == LANE_ZERO and what == 'lost':
            out += ['\t.reg .b32 %argus_lost;', '\t.reg .pred %argus_nl;',
                    '\tmov.u32 %argus_lost, 0;']
        elif t.startswith('mov.u32 %argus_e, ') and what == 'lost':
            out += [line, '\tactivemask.b32 %argus_t0;', '\tand.b32 %argus_t0, %argus_t0, 1;',
                    '\tsetp.eq.u32 %argus_nl, %argus_t0, 0;',
                    '\t@%argus_nl add.u32 %argus_lost, %argus_lost, 1;']
            continue
        elif t == '@%argus_on red.global.max.u32 [%argus_addr], %argus_cnt;' and what == 'lost':
            out.append('\t@%argus_on red.global.max.u32 [%argus_addr+4], %argus_lost;')
        elif t == PLACE and what == 'redux':
            out += ['\tactivemask.b32 %argus_t0;',
                    '\tredux.sync.max.u32 %argus_cnt, %argus_cnt, %argus_t0;']
        out.append(line)
    return out


# lazy: the entry lines that read the symbol's words, moved to the first end marker's block.
LAZY_INIT = ('setp.ne.u64 %argus_on, %argus_hdr, 0;', 'cvt.u32.u64 %argus_cap, %argus_x;',
             'shr.u64 %argus_x, %argus_x, 32;', 'cvt.u32.u64 %argus_t0, %argus_x;',
             'mad.lo.u32 %argus_t1, %argus_cta, %argus_t0, %argus_warp;',
             'mul.wide.u32 %argus_x, %argus_t1, %argus_cap;', 'shl.b64 %argus_x, %argus_x, 5;',
             'add.s64 %argus_base, %argus_hdr, %argus_x;', 'add.s64 %argus_base, %argus_base, 64;',
             'shl.b32 %argus_l16, %argus_cap, 1;', 'sub.u32 %argus_l16, %argus_l16, 3;',
             'mov.b64 {%argus_plo, %argus_ph}, %argus_base;',
             'mad.lo.u32 %argus_plast, %argus_l16, 16, %argus_plo;',
             'sub.u32 %argus_plo, %argus_plo, 16;',
             'setp.gt.and.u32 %argus_on, %argus_cap, 1, %argus_on;')
LAZY_BEGIN = ('add.u32 %argus_plo, %argus_plo, 16;',
              'min.u32 %argus_plo, %argus_plo, %argus_plast;',
              'mov.b64 %argus_addr, {%argus_plo, %argus_ph};',
              'add.u32 %argus_cnt, %argus_cnt, 1;')


def lazy(text):
    """The `lazy` edit of one kernel's lines at a time (see the docstring)."""
    out, blocks, site = [], [], 0
    for line in text.split('\n'):
        t = line.strip()
        if t.startswith('.visible .entry'):
            blocks, site = [], 0
        if t in LAZY_INIT:
            continue
        if t == GENERIC_LOAD:
            # Two 8-byte loads: with one 16-byte load ptxas copied a loaded word at the entry
            # (its register was wanted for the offset), which waits for the load there.
            out += ['\tld.u64 %argus_hdr, [%argus_x];', '\tld.u64 %argus_x, [%argus_x+8];']
            continue
        if t == 'mov.u32 %argus_cnt, 0;':
            out += ['\t.reg .pred %argus_lz;', '\t.reg .pred %argus_un;', '\t.reg .b32 %argus_off;',
                    '\tmov.u32 %argus_off, 0;', '\tsetp.eq.u32 %argus_un, 0, 0;', line]
            continue
        if t == LANE_ZERO:
            # The lane-0 predicate without the symbol (the store predicate joins it later).
            out.append('\tsetp.eq.u32 %argus_lz, %argus_t1, 0;')
            continue
        if t in LAZY_BEGIN:
            if t == LAZY_BEGIN[0]:
                out.append('\tadd.u32 %argus_off, %argus_off, 16;')
            continue
        if t.startswith('@%argus_on mov.b32 %argus_i0, ') or t in COPIES:
            out.append(line.replace('@%argus_on ', '@%argus_lz '))
            continue
        if t == END_TIME or t == '// argus trace: closing record':
            label = f'$argus_init_{site}'
            out += [f'\t@%argus_un bra {label};', f'$argus_back_{site}:']
            blocks += [f'{label}:', '\tsetp.ne.u32 %argus_un, 0, 0;']
            blocks += ['\t' + i for i in LAZY_INIT] + [
                '\tsetp.eq.and.u32 %argus_w, %argus_t1, 0, %argus_on;'.replace(
                    '%argus_t1', '%argus_lane'), f'\tbra.uni $argus_back_{site};']
            site += 1
            if t == END_TIME:
                out += ['\tadd.u32 %argus_t3, %argus_plo, %argus_off;',
                        '\tmin.u32 %argus_t3, %argus_t3, %argus_plast;',
                        '\tmov.b64 %argus_addr, {%argus_t3, %argus_ph};']
            else:
                out += [line, '\tshr.u32 %argus_cnt, %argus_off, 4;']
                continue
        if t == 'ret;':
            out += [line] + blocks
            continue
        out.append(line)
    return '\n'.join(out).replace('\tmov.u32 %argus_t1, %laneid;',
                                  '\t.reg .b32 %argus_lane;\n\tmov.u32 %argus_lane, %laneid;\n'
                                  '\tmov.u32 %argus_t1, %argus_lane;')


def main():
    text, what = open(sys.argv[1]).read(), sys.argv[2]
    if what == 'lazy':
        if (GENERIC_LOAD not in text or text.count('ret;') != text.count('.entry')
                or COPIES[0] not in text):
            sys.exit('compact_edits.py: lazy is an edit of the default build of the seed kernels '
                     'as of commit 6aef161 (the end marker\'s copies)')
        print(lazy(text))
        return
    if what == 'tidx':
        if '\n'.join('\t' + i for i in LINEAR_INDICES) not in text:
            sys.exit('compact_edits.py: tidx needs the entry\'s linear-index sequence')
        print('\n'.join(edit(text.split('\n'), what)))
        return
    if what == 'late' and '// argus trace: begin ' in text:
        sys.exit('compact_edits.py: late is an edit of entryonly (entryonly+late)')
    if what in ('entryonly', 'late', 'nored', 'noclose', 'noexit') and GENERIC_LOAD in text:
        print('\n'.join(edit(text.split('\n'), what)))
        return
    if what in ('eon', 'direct', 'split'):
        lines = [line.strip() for line in text.split('\n')]
        if END_TIME not in lines or BEGIN_TIME not in lines or not all(c in lines for c in COPIES):
            sys.exit(f'compact_edits.py: {what} is an edit of the default compact lowering as of '
                     'commit 6aef161 (record_place=begin, the end marker\'s predicated copies)')
        print('\n'.join(edit(text.split('\n'), what)))
        return
    if what == 'defer':
        lines = [line.strip() for line in text.split('\n')]
        if END_HALF not in lines or lines.count(END_HALF) != lines.count('// argus trace: closing record'):
            sys.exit('compact_edits.py: defer is an edit of the halves lowering of one leaf region '
                     '(commit 3d80b0b)')
        print('\n'.join(edit(text.split('\n'), what)))
        return
    if what == 'constload':
        if GENERIC_LOAD not in text:
            sys.exit('compact_edits.py: constload is an edit of the generic symbol read')
        print('\n'.join(edit(text.split('\n'), what)))
        return
    if what == 'wide':
        lines = [line.strip() for line in text.split('\n')]
        if WINDOWED_PLACE[1] not in lines:
            sys.exit('compact_edits.py: wide is an edit of the windowed place (after 1db3ecc)')
        if lines.count(WINDOWED_PLACE[0]) != lines.count(WINDOWED_PLACE[1]):
            sys.exit('compact_edits.py: wide is an edit of an unscoped trace (a scoped one '
                     'predicates the place\'s add)')
        print('\n'.join(edit(text.split('\n'), what)))
        return
    known = ('all', 'redux', 'nored', 'nolane', 'tidlane', 'lost', 'noclose', 'noexit',
             'placebegin', 'begin')
    if what not in known:
        sys.exit(f'compact_edits.py: unknown edit {what!r}; known: wide, constload, tidx, eon, '
                 f'direct, split, defer, entryonly, late, lazy, {", ".join(known)}')
    if STORE not in text or PLACE not in text:
        sys.exit('compact_edits.py: not a compact-layout trace of the seed kernels as of '
                 'commit 1db3ecc (the edits named above the list of today\'s are of that '
                 'lowering)')
    print('\n'.join(edit(text.split('\n'), what)))


if __name__ == '__main__':
    main()
