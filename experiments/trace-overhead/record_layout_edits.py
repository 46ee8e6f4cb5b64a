"""Edits of the seed compute kernel's full_trace PTX for experiments/trace-overhead/record-layout-experiment.sh
(issue 5: where the tracing overhead goes). Usage: record_layout_edits.py FULL_TRACE.ptx VARIANT
  nostore  both record stores removed (the floor: everything else of the instrumentation stays)
  early    the end marker's leader election, slot clamp, record address and sequence number are
           computed at the begin marker, so the end marker is timer read -> stores
  early16  early, and one 16-byte store (begin and end low 32 bits, meta, iteration) instead of two
  early8   early, and one 8-byte store (begin and end low 32 bits) only
  split    the record's halves written at the markers that know them, from registers nothing
           overwrites soon: the begin marker reserves the slot (leader, slot clamp, sequence
           number, counter advanced) and stores {begin, meta, iteration}; the end marker stores
           {end, CTA, sequence<<8|warp} through an address it computes itself. (SASS showed why
           the current two end-marker stores cost: ptxas makes the next write of a stored
           register -- the loop counter stored as the iteration, the begin timestamp at the next
           begin -- wait on the store's register-read barrier, on every occurrence.) The halves
           are in a different order than the decoder's, so the trace is for timing only.
  deferred the end marker keeps its record in registers and the next begin marker (or the
           kernel's exit) stores it, so that nothing overwrites the stored registers right after
           the stores (the register-read barrier wait of the current stores).
  smem16   16-byte records ({begin, end} low 32 bits, meta, iteration) staged in a per-warp ring
           of 32 in shared memory (one st.shared per occurrence, by the elected lane) and copied
           to the trace buffer 32 at a time by the whole warp (ld.shared + st.global per lane,
           predicated on the ring being full; the rest at the kernel's exit). Timing only.
  pinned   16-byte records written as two 8-byte halves, each at the marker that defines its
           values ({begin low 32 bits, iteration} at the begin marker, {end low 32 bits, meta}
           at the end marker, each through an address that marker computes), and every value a
           store reads defined by an instruction predicated on the trace being on: ptxas then
           keeps each in a register of its own until the same marker defines it again, one
           occurrence later, so nothing waits for the stores' register reads. Timing only.
  pinsmem  `pinned` into a per-warp shared-memory ring of 32 16-byte entries (32-bit addresses:
           no register pairs to align), copied to the trace buffer 32 at a time by the whole warp
           in a block the hot path branches around. Timing only.
  lanes8   the record unchanged (32 bytes, the decoder's layout), written by lanes 0-7 of a
           converged warp with one 4-byte store each (one st.global.u32 per warp: one register
           read per lane instead of the two 16-byte stores' eight). Every lane holds the same
           marker values (one timer read per warp), so lane k picks word k with three selects
           on its lane bits; a diverged warp keeps the elected lane's two stores, branched
           around when converged. The stores' cost follows the bytes of registers they read,
           warp-wide (experiments/HISTORY.md), which this cuts eightfold.
  late16   the fewest marker instructions that keep the fields: a 16-byte record {begin, end (low
           32 bits each), meta, iteration} stored once, at the end marker, by every lane of the
           warp (same data, same address: no activemask/elect.sync, predicated on the trace being
           on only), into 16-byte slots (the warp's cap x 32 bytes hold 2 cap of them: slots 0 ..
           2 cap - 2, the last clamped; seq = slot below that), meta computed once at the kernel
           entry, and at `ret` a closing record {record count, 0, meta, kNoIteration} in slot
           min(count, 2 cap - 1), so the decoder still knows how many records the clamp lost.
           Begin timestamp and iteration are stored from copies made at the end marker
           (predicated on the trace being on, so ptxas gives them registers of their own): the
           begin marker's timer read and the kernel's loop-counter increment, both within a few
           instructions of the store, then no longer write a register the store reads. ptxas 13
           waits on a store's read barrier at the latest at the next forward conditional branch
           (the seed's inner-loop guard right after the next begin marker: with that branch
           deleted the wait moves past the inner loop), so an end-marker store waited on about 8
           instructions later is the best a marker-local record gets in the seed; ptxas still
           reuses the end timestamp's register for the loop bound 3 instructions on. Lost
           against the 32-byte record: the timestamps' high 32 bits; CTA and warp come from the
           slot's address, seq from the slot and the closing count. Diverged warps (none in the
           seed) would write one record per active path into the same slot. Timing only.
  late16nc `late16` without the two copies (2 instructions fewer per occurrence; the store is then
           waited on 1 instruction later, by the loop-counter increment).
  late8x2  `late16` written as two 8-byte stores ({begin, end}, {meta, iteration}): early8 (one
           8-byte store) cost half of early16 with the same code, and two 8-byte stores free
           ptxas from gathering an aligned quad (both share one read barrier, waited on 4-5
           instructions later, by the loop-bound reload at the next occurrence's top).
  late16p  `late16` with no store source dying at the store, so that ptxas has no register of it
           to hand to the next instructions (in late16 the loop-bound reload takes the end
           timestamp's, 3 instructions on): the record pointer is loop-carried (base - 16 at the
           kernel entry, + 16 at every end marker before the store; no slot clamp: the store is
           predicated on count <= 2 cap - 2 and the trace being on, so records past the last slot
           are dropped instead of overwriting it), the end timestamp is stored from a copy made
           under the trace-on predicate, and the begin marker's timer read is itself predicated
           (a register of its own, not one the store just read). Same record, slots and closing
           record as late16, except that the last record slot holds the (2 cap - 1)-th record,
           not the newest. SASS (ptxas 13): no store register is overwritten before the next end
           marker (seed_memory: 8 instructions on); what is left is the kernel's loop-bound
           reload (LDC) taking the store's barrier as its write barrier, 4 (seed_compute) / 5
           (seed_memory) instructions on, with late16's loop instruction count in seed_compute
           (18; seed_memory 22 against 20: two moves into an aligned register pair). Timing only.
  late16pb `late16p` without the begin timestamp's copy (the store reads the predicated begin
           timer read, overwritten by the next occurrence's one): late16's wait distances (3 / 4,
           by that timer read) with one loop instruction fewer than late16 (17 / 19), to tell
           instruction count from wait distance.
  late16el, late16pel  `late16` and `late16p` with the record stores (and the closing one) by
           the elected lane only, as the current lowering does (activemask, elect.sync, and with
           the trace-on predicate): the per-warp counter is a per-thread register, so when only
           some lanes run a marker (one thread issuing TMA loads, say) the lanes' counters part,
           and stores by every lane would then write one record to several slots. The
           form a lowering could use; what the election costs on top of late16/late16p.
A `+wb` suffix (e.g. early8+wb) also drops the stores' `.cs` (streaming) cache hint. Each kernel
of the file is edited alike. The seed kernels have one region and no nesting, so the record counter
at a begin marker is the counter at its end marker; the edits are for this measurement, not a
general pass."""
import sys


def edit_kernel(lines, variant):
    def idx(pred):
        return [i for i, l in enumerate(lines) if pred(l.strip())]
    stores = idx(lambda l: l.startswith('@%argus_st st.global'))
    if not stores:
        return lines
    assert len(stores) == 2, stores
    if variant == 'nostore':
        for i in reversed(stores):
            del lines[i]
        return lines
    if variant == 'full':
        return lines
    if variant == 'split':
        return split_stores(lines)
    if variant == 'deferred':
        return deferred_stores(lines)
    if variant == 'smem16':
        return smem_ring(lines)
    if variant in ('pinned', 'pinsmem'):
        return pinned(lines, ring=variant == 'pinsmem')
    if variant == 'lanes8':
        return lane_words(lines)
    if variant in LATE:
        return late(lines, variant)
    # The end marker's leader / slot / sequence computations move to the begin marker.
    movable = ('activemask.b32 %argus_t0', 'elect.sync', 'and.pred %argus_st', 'min.u32 %argus_t1',
               'mad.wide.u32 %argus_addr', 'shl.b32 %argus_t2', 'or.b32 %argus_t2')
    moved = [l for l in lines if l.strip().startswith(movable)]
    assert len(moved) == 7, moved
    lines = [l for l in lines if not l.strip().startswith(movable)]
    b = idx(lambda l: l.startswith('mov.u64 %argus_b0, %globaltimer'))
    assert len(b) == 1
    lines[b[0] + 1:b[0] + 1] = moved
    st = idx(lambda l: l.startswith('@%argus_st st.global'))
    op = 'st.global.cs' if 'st.global.cs.' in lines[st[0]] else 'st.global'
    low = ['\t.reg .b32 %argus_lo<2>;', '\tcvt.u32.u64 %argus_lo0, %argus_b0;',
           '\tcvt.u32.u64 %argus_lo1, %argus_now;']
    if variant == 'early16':
        one = f'\t@%argus_st {op}.v4.u32 [%argus_addr], {{%argus_lo0, %argus_lo1, %argus_m0, %argus_i0}};'
    elif variant == 'early8':
        one = f'\t@%argus_st {op}.v2.u32 [%argus_addr], {{%argus_lo0, %argus_lo1}};'
    else:
        assert variant == 'early', variant
        return lines
    lines[st[0]:st[1] + 1] = low + [one]
    return lines


def split_stores(lines):
    """The `split` variant of one kernel (see the module's docstring)."""
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line, '\t.reg .b64 %argus_a<2>;', '\t.reg .b32 %argus_s0;',
                    '\t.reg .b32 %argus_q0;', '\t.reg .b32 %argus_h<4>;']
            continue
        if t.startswith('mov.u64 %argus_b0, %globaltimer'):
            out += [line,
                    '\tactivemask.b32 %argus_t0;',
                    '\telect.sync _|%argus_lead, %argus_t0;',
                    '\tand.pred %argus_st, %argus_on, %argus_lead;',
                    '\tmin.u32 %argus_s0, %argus_cnt, %argus_last;',
                    '\tmov.u32 %argus_q0, %argus_cnt;',
                    '\t@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;',
                    '\tmad.wide.u32 %argus_a0, %argus_s0, 32, %argus_base;',
                    '\tmov.b64 {%argus_h0, %argus_h1}, %argus_b0;',
                    '\t@%argus_st st.global.cs.v4.u32 [%argus_a0], '
                    '{%argus_h0, %argus_h1, %argus_m0, %argus_i0};']
            continue
        if t.startswith(('min.u32 %argus_t1', 'mad.wide.u32 %argus_addr', 'shl.b32 %argus_t2',
                         'or.b32 %argus_t2', '@%argus_st st.global', '@%argus_on add.u32')):
            if t.startswith('@%argus_st st.global.cs.v2.u64'):
                out += ['\tmad.wide.u32 %argus_a1, %argus_s0, 32, %argus_base;',
                        '\tshl.b32 %argus_t2, %argus_q0, 8;',
                        '\tor.b32 %argus_t2, %argus_t2, %argus_warp;',
                        '\tmov.b64 {%argus_h2, %argus_h3}, %argus_now;',
                        '\t@%argus_st st.global.cs.v4.u32 [%argus_a1+16], '
                        '{%argus_h2, %argus_h3, %argus_cta, %argus_t2};']
            continue
        out.append(line)
    return out


def lane_words(lines):
    """The `lanes8` variant of one kernel (see the module's docstring)."""
    skips = iter(range(1, 1000))
    skip = None  # the label after a diverged warp's two stores
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line, '\t.reg .b32 %argus_lane;', '\t.reg .b32 %argus_w<8>;',
                    '\t.reg .pred %argus_k<3>;', '\t.reg .pred %argus_l8;',
                    '\t.reg .pred %argus_conv;', '\t.reg .pred %argus_sl;',
                    '\t.reg .b64 %argus_la;']
            continue
        if t.startswith('sub.u32 %argus_last, %argus_cap, 1'):
            out += [line, '\tmov.u32 %argus_lane, %laneid;',
                    '\tsetp.lt.u32 %argus_l8, %argus_lane, 8;']
            for bit in range(3):
                out += [f'\tand.b32 %argus_w0, %argus_lane, {1 << bit};',
                        f'\tsetp.ne.u32 %argus_k{bit}, %argus_w0, 0;']
            continue
        if t.startswith('@%argus_st st.global.cs.v2.u64'):
            skip = f'$ARGUS_SKIP_{next(skips)}'
            out += ['\tsetp.eq.b32 %argus_conv, %argus_t0, -1;',
                    f'\t@%argus_conv bra {skip};',
                    line]
            continue
        if t.startswith('@%argus_st st.global.cs.v4.u32'):
            out += [line, f'{skip}:',
                    '\tmov.b64 {%argus_w0, %argus_w1}, %argus_b0;',
                    '\tmov.b64 {%argus_w2, %argus_w3}, %argus_now;',
                    '\tselp.b32 %argus_w0, %argus_w1, %argus_w0, %argus_k0;',
                    '\tselp.b32 %argus_w2, %argus_w3, %argus_w2, %argus_k0;',
                    '\tselp.b32 %argus_w4, %argus_cta, %argus_m0, %argus_k0;',
                    '\tselp.b32 %argus_w6, %argus_t2, %argus_i0, %argus_k0;',
                    '\tselp.b32 %argus_w0, %argus_w2, %argus_w0, %argus_k1;',
                    '\tselp.b32 %argus_w4, %argus_w6, %argus_w4, %argus_k1;',
                    '\tselp.b32 %argus_w0, %argus_w4, %argus_w0, %argus_k2;',
                    '\tmad.wide.u32 %argus_la, %argus_lane, 4, %argus_addr;',
                    '\tand.pred %argus_sl, %argus_on, %argus_conv;',
                    '\tand.pred %argus_sl, %argus_sl, %argus_l8;',
                    '\t@%argus_sl st.global.cs.u32 [%argus_la], %argus_w0;']
            continue
        out.append(line)
    return out


def deferred_stores(lines):
    """The `deferred` variant of one kernel (see the module's docstring)."""
    flush = ['\t@%argus_pp st.global.cs.v2.u64 [%argus_pa], {%argus_pb, %argus_pe};',
             '\t@%argus_pp st.global.cs.v4.u32 [%argus_pa+16], '
             '{%argus_pm, %argus_cta, %argus_pi, %argus_pt};',
             '\tsetp.ne.u32 %argus_pp, 0, 0;']
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line, '\t.reg .b64 %argus_pa;', '\t.reg .b64 %argus_pb;', '\t.reg .b64 %argus_pe;',
                    '\t.reg .b32 %argus_pm;', '\t.reg .b32 %argus_pi;', '\t.reg .b32 %argus_pt;',
                    '\t.reg .pred %argus_pp;']
            continue
        if t.startswith('mov.u32 %argus_cap, 0'):
            out += ['\tsetp.ne.u32 %argus_pp, 0, 0;', line]
            continue
        if t.startswith('mov.u64 %argus_b0, %globaltimer'):
            out += [line] + flush
            continue
        if t.startswith('@%argus_st st.global.cs.v2.u64'):
            out += ['\tmov.u64 %argus_pa, %argus_addr;', '\tmov.u64 %argus_pb, %argus_b0;',
                    '\tmov.u64 %argus_pe, %argus_now;', '\tmov.b32 %argus_pm, %argus_m0;',
                    '\tmov.b32 %argus_pi, %argus_i0;', '\tmov.b32 %argus_pt, %argus_t2;',
                    '\tmov.pred %argus_pp, %argus_st;']
            continue
        if t.startswith('@%argus_st st.global.cs.v4.u32'):
            continue
        if t == 'ret;':
            out += flush
        out.append(line)
    return out


# The end marker's work of the current trace, which the variants below replace.
END_MARKER_WORK = ('min.u32 %argus_t1', 'mad.wide.u32 %argus_addr', 'shl.b32 %argus_t2',
                   'or.b32 %argus_t2', '@%argus_st st.global.cs.v4.u32',
                   '@%argus_on add.u32 %argus_cnt')


RING_REGS = ['\t.shared .align 16 .b8 __argus_ring[4096];', '\t.reg .b32 %argus_rb;',
             '\t.reg .b32 %argus_lane;', '\t.reg .b32 %argus_so;', '\t.reg .b32 %argus_gi;',
             '\t.reg .b32 %argus_n;', '\t.reg .b64 %argus_ga;', '\t.reg .b32 %argus_q<4>;',
             '\t.reg .pred %argus_fl;', '\t.reg .pred %argus_full;']
# After the kernel entry's `sub.u32 %argus_last, ...`: this warp's 512-byte ring and its lane.
RING_SETUP = ['\tmov.u32 %argus_rb, __argus_ring;', '\tand.b32 %argus_so, %argus_warp, 7;',
              '\tmad.lo.u32 %argus_rb, %argus_so, 512, %argus_rb;',
              '\tmov.u32 %argus_lane, %laneid;']


def ring_copy(count_reg, guard, skip_label=None):
    """The warp copies ring entries 0..count-1 to records cnt-count .. cnt-1 (16 bytes each) when
    `guard` holds: branched around with `skip_label`, else predicated lane by lane."""
    lanes = ['\tbar.warp.sync -1;' if skip_label else '\t@%argus_on bar.warp.sync -1;',
             f'\tsetp.lt.u32 %argus_fl, %argus_lane, {count_reg};']
    if not skip_label:
        lanes.append(f'\tand.pred %argus_fl, %argus_fl, {guard};')
    body = lanes + [
        '\tshl.b32 %argus_so, %argus_lane, 4;',
        '\tadd.u32 %argus_so, %argus_so, %argus_rb;',
        '\t@%argus_fl ld.shared.v4.u32 {%argus_q0, %argus_q1, %argus_q2, %argus_q3}, [%argus_so];',
        f'\tsub.u32 %argus_gi, %argus_cnt, {count_reg};',
        '\tadd.u32 %argus_gi, %argus_gi, %argus_lane;',
        '\tmad.wide.u32 %argus_ga, %argus_gi, 16, %argus_base;',
        '\t@%argus_fl st.global.v4.u32 [%argus_ga], {%argus_q0, %argus_q1, %argus_q2, %argus_q3};']
    if skip_label:
        return [f'\t@!{guard} bra {skip_label};'] + body + [f'{skip_label}:']
    return body


def smem_ring(lines):
    """The `smem16` variant of one kernel (see the module's docstring); 8 warps per CTA at most."""
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line, '\t.reg .b32 %argus_h<4>;'] + RING_REGS
            continue
        if t.startswith('sub.u32 %argus_last, %argus_cap, 1'):
            out += [line] + RING_SETUP
            continue
        if t.startswith(END_MARKER_WORK):
            continue
        if t.startswith('@%argus_st st.global.cs.v2.u64'):
            out += ['\tand.b32 %argus_so, %argus_cnt, 31;',
                    '\tshl.b32 %argus_so, %argus_so, 4;',
                    '\tadd.u32 %argus_so, %argus_so, %argus_rb;',
                    '\tcvt.u32.u64 %argus_h0, %argus_b0;',
                    '\tcvt.u32.u64 %argus_h1, %argus_now;',
                    '\t@%argus_st st.shared.v4.u32 [%argus_so], '
                    '{%argus_h0, %argus_h1, %argus_m0, %argus_i0};',
                    '\t@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;',
                    '\tand.b32 %argus_n, %argus_cnt, 31;',
                    '\tsetp.eq.u32 %argus_full, %argus_n, 0;',
                    '\tand.pred %argus_full, %argus_full, %argus_on;',
                    '\tmov.u32 %argus_n, 32;']
            out += ring_copy('%argus_n', '%argus_full')
            continue
        if t == 'ret;':
            out += ['\tand.b32 %argus_n, %argus_cnt, 31;'] + ring_copy('%argus_n', '%argus_on')
        out.append(line)
    return out


def pinned(lines, ring):
    """The `pinned` (ring=False: 8-byte global stores) and `pinsmem` (ring=True: 8-byte stores into
    the warp's shared-memory ring, copied 32 entries at a time) variants of one kernel."""
    skips = iter(range(1, 1000))
    # The begin half's address: a record of the trace buffer, or an entry of the ring.
    if ring:
        regs = ['\t.reg .b32 %argus_ab;', '\t.reg .b32 %argus_ae;'] + RING_REGS
        slot = ['\tand.b32 %argus_so, %argus_cnt, 31;',
                '\t@%argus_on mad.lo.u32 %argus_ab, %argus_so, 16, %argus_rb;']
        space, add, zero = 'shared', 'add.u32', 'mov.u32'
    else:
        regs = ['\t.reg .b64 %argus_ab;', '\t.reg .b64 %argus_ae;', '\t.reg .b32 %argus_s0;']
        slot = ['\t@%argus_on min.u32 %argus_s0, %argus_cnt, %argus_last;',
                '\t@%argus_on mad.wide.u32 %argus_ab, %argus_s0, 16, %argus_base;']
        space, add, zero = 'global.cs', 'add.u64', 'mov.u64'
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line, '\t.reg .b32 %argus_h<2>;'] + regs
            continue
        if t.startswith('mov.u32 %argus_cnt, 0'):
            out += [line] + [f'\tmov.u32 %argus_{r}, 0;' for r in ('h0', 'h1', 'i0')] + \
                [f'\t{zero} %argus_ab, 0;', f'\t{zero} %argus_ae, 0;']
            continue
        if ring and t.startswith('sub.u32 %argus_last, %argus_cap, 1'):
            out += [line] + RING_SETUP
            continue
        if t.startswith('mov.b32 %argus_i0,'):
            out.append('\t@%argus_on ' + t)
            continue
        if t.startswith('mov.u64 %argus_b0, %globaltimer'):
            out += ['\t@%argus_on mov.u32 %argus_h0, %globaltimer_lo;',
                    '\tactivemask.b32 %argus_t0;',
                    '\telect.sync _|%argus_lead, %argus_t0;',
                    '\tand.pred %argus_st, %argus_on, %argus_lead;'] + slot + [
                    '\t@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;',
                    f'\t@%argus_st st.{space}.v2.u32 [%argus_ab], {{%argus_h0, %argus_i0}};']
            continue
        if t.startswith('mov.u64 %argus_now, %globaltimer'):
            out.append('\t@%argus_on mov.u32 %argus_h1, %globaltimer_lo;')
            continue
        if t.startswith(END_MARKER_WORK):
            continue
        if t.startswith('@%argus_st st.global.cs.v2.u64'):
            out += [f'\t@%argus_on {add} %argus_ae, %argus_ab, 8;',
                    f'\t@%argus_st st.{space}.v2.u32 [%argus_ae], {{%argus_h1, %argus_m0}};']
            if ring:
                out += ['\tand.b32 %argus_n, %argus_cnt, 31;',
                        '\tsetp.eq.u32 %argus_full, %argus_n, 0;',
                        '\tand.pred %argus_full, %argus_full, %argus_on;',
                        '\tmov.u32 %argus_n, 32;']
                out += ring_copy('%argus_n', '%argus_full', f'$ARGUS_SKIP_{next(skips)}')
            continue
        if ring and t == 'ret;':
            out += ['\tand.b32 %argus_n, %argus_cnt, 31;'] + \
                ring_copy('%argus_n', '%argus_on', f'$ARGUS_SKIP_{next(skips)}')
        out.append(line)
    return out


LATE = ('late16', 'late16nc', 'late8x2', 'late16p', 'late16pb', 'late16el', 'late16pel')
ELECT = ('\tactivemask.b32 %argus_t0;', '\telect.sync _|%argus_lead, %argus_t0;',
         '\tand.pred %argus_st, %argus_on, %argus_lead;')


def late(lines, variant):
    """The `late16`, `late16nc`, `late8x2`, `late16p`, `late16pb`, `late16el` and `late16pel`
    variants of one kernel (see the module's docstring)."""
    elect = variant.endswith('el')
    if elect:
        variant = variant[:-2]
    on = '%argus_st' if elect else '%argus_on'  # what the record stores are predicated on
    copies = variant != 'late16nc'
    pointer = variant in ('late16p', 'late16pb')  # loop-carried record pointer, kept end timestamp
    begin = '%argus_bs' if copies and variant != 'late16pb' else '%argus_h0'
    iteration = '%argus_ic' if copies else '%argus_i0'
    if variant == 'late8x2':
        stores = [f'\t@%argus_on st.global.cs.v2.u32 [%argus_ab], {{{begin}, %argus_e0}};',
                  f'\t@%argus_on st.global.cs.v2.u32 [%argus_ab+8], {{%argus_m0, {iteration}}};']
    elif pointer:
        stores = ['\t@%argus_sk st.global.cs.v4.u32 [%argus_ab], '
                  f'{{{begin}, %argus_es, %argus_m0, {iteration}}};']
    else:
        stores = [f'\t@{on} st.global.cs.v4.u32 [%argus_ab], '
                  f'{{{begin}, %argus_e0, %argus_m0, {iteration}}};']
    election = list(ELECT) if elect else []
    out = []
    for line in lines:
        t = line.strip()
        if t.startswith('.reg .b64 %argus_b<'):
            out += [line] + [f'\t.reg .b32 %argus_{r};' for r in ('h0', 'e0', 'bs', 'ic', 's0', 'l16')] + \
                ['\t.reg .b64 %argus_ab;']
            if pointer:
                out += ['\t.reg .b32 %argus_es;', '\t.reg .pred %argus_sk;']
            continue
        if t.startswith('sub.u32 %argus_last, %argus_cap, 1'):
            # 16-byte slots: the warp's cap x 32 bytes hold 2 x cap of them; records use slots
            # 0 .. 2 cap - 2 (the last one clamped), the closing record slot min(count, 2 cap - 1).
            out += [line, '\tshl.b32 %argus_l16, %argus_cap, 1;', '\tsub.u32 %argus_l16, %argus_l16, 2;']
            if pointer:  # the record pointer, advanced before each store
                out += ['\tadd.s64 %argus_ab, %argus_base, -16;', '\tmov.u32 %argus_es, 0;',
                        '\tmov.u32 %argus_bs, 0;', '\tmov.u32 %argus_h0, 0;']
            else:
                out.append('\tmov.u32 %argus_bs, 0;')
            out += ['\tmov.u32 %argus_ic, 0;', '\tor.b32 %argus_m0, %argus_meta, 0xf000;']
            continue
        if t.startswith('or.b32 %argus_m0, %argus_meta'):
            continue  # hoisted to the kernel entry (constant per marker site)
        if t.startswith('mov.u64 %argus_b0, %globaltimer'):
            out.append(('\t@%argus_on ' if pointer else '\t') + 'mov.u32 %argus_h0, %globaltimer_lo;')
            continue
        if t.startswith('mov.u64 %argus_now, %globaltimer') and pointer:
            out += ['\tmov.u32 %argus_e0, %globaltimer_lo;', '\t@%argus_on mov.u32 %argus_es, %argus_e0;']
            if begin == '%argus_bs':
                out.append('\t@%argus_on mov.u32 %argus_bs, %argus_h0;')
            out += ['\t@%argus_on mov.u32 %argus_ic, %argus_i0;',
                    ] + election + [
                    f'\tsetp.le.and.u32 %argus_sk, %argus_cnt, %argus_l16, {on};',
                    '\tadd.s64 %argus_ab, %argus_ab, 16;',
                    '\t@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;'] + stores
            continue
        if t.startswith('mov.u64 %argus_now, %globaltimer'):
            out.append('\tmov.u32 %argus_e0, %globaltimer_lo;')
            if copies:
                out += ['\t@%argus_on mov.u32 %argus_bs, %argus_h0;',
                        '\t@%argus_on mov.u32 %argus_ic, %argus_i0;']
            out += election + ['\tmin.u32 %argus_s0, %argus_cnt, %argus_l16;',
                               '\tmad.wide.u32 %argus_ab, %argus_s0, 16, %argus_base;',
                               '\t@%argus_on add.u32 %argus_cnt, %argus_cnt, 1;'] + stores
            continue
        if t.startswith(('activemask.b32 %argus_t0', 'elect.sync', 'and.pred %argus_st',
                         '@%argus_st st.global') + END_MARKER_WORK):
            continue
        if t == 'ret;':
            # The closing record: {record count, 0, meta, kNoIteration}.
            out += election + ['\tadd.u32 %argus_l16, %argus_l16, 1;',
                               '\tmin.u32 %argus_s0, %argus_cnt, %argus_l16;',
                               '\tmad.wide.u32 %argus_ab, %argus_s0, 16, %argus_base;',
                               f'\t@{on} st.global.cs.v4.u32 [%argus_ab], '
                               '{%argus_cnt, 0, %argus_meta, 0xffffffff};']
        out.append(line)
    return out


def main():
    text, variant = open(sys.argv[1]).read(), sys.argv[2]
    variant, _, suffix = variant.partition('+')
    if suffix == 'wb':
        text = text.replace('@%argus_st st.global.cs.', '@%argus_st st.global.')
    else:
        assert not suffix, suffix
    out, chunk = [], []
    for line in text.split('\n'):
        if line.startswith('.visible .entry') or line.startswith('.entry'):
            out += edit_kernel(chunk, variant)
            chunk = []
        chunk.append(line)
    out += edit_kernel(chunk, variant)
    print('\n'.join(out))


if __name__ == '__main__':
    main()
