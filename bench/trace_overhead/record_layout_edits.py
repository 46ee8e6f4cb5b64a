"""Edits of the seed compute kernel's full_trace PTX for scripts/gpu/record-layout-experiment.sh
(issue 5: where the tracing overhead goes). Usage: record_layout_edits.py FULL_TRACE.ptx VARIANT
  nostore  both record stores removed (the floor: everything else of the instrumentation stays)
  early    the end marker's leader election, slot clamp, record address and sequence number are
           computed at the begin marker, so the end marker is timer read -> stores
  early16  early, and one 16-byte store (begin and end low 32 bits, meta, iteration) instead of two
  early8   early, and one 8-byte store (begin and end low 32 bits) only
The kernel has one region and no nesting, so the record counter at a begin marker is the counter
at its end marker; the edits are for this measurement, not a general pass."""
import re, sys
src, variant = open(sys.argv[1]).read(), sys.argv[2]
lines = src.split('\n')
def idx(pred):
    return [i for i, l in enumerate(lines) if pred(l.strip())]
stores = idx(lambda l: l.startswith('@%argus_st st.global'))
assert len(stores) == 2, stores
if variant == 'nostore':
    for i in reversed(stores): del lines[i]
else:
    # The end block's leader / slot / sequence computations move to the begin marker (this kernel
    # has one region, no nesting: the counter at begin is the counter at end).
    movable = ('activemask.b32 %argus_t0', 'elect.sync', 'and.pred %argus_st', 'min.u32 %argus_t1',
               'mad.wide.u32 %argus_addr', 'shl.b32 %argus_t2', 'or.b32 %argus_t2')
    moved = [l for l in lines if l.strip().startswith(movable)]
    assert len(moved) == 7, moved
    lines = [l for l in lines if not l.strip().startswith(movable)]
    b = idx(lambda l: l.startswith('mov.u64 %argus_b0, %globaltimer'))
    assert len(b) == 1
    lines[b[0]+1:b[0]+1] = moved
    st = idx(lambda l: l.startswith('@%argus_st st.global'))
    if variant == 'early16':
        lines[st[0]] = '\t.reg .b32 %argus_lo<2>;\n\tcvt.u32.u64 %argus_lo0, %argus_b0;\n\tcvt.u32.u64 %argus_lo1, %argus_now;\n\t@%argus_st st.global.cs.v4.u32 [%argus_addr], {%argus_lo0, %argus_lo1, %argus_m0, %argus_i0};'
        del lines[st[1]]
    elif variant == 'early8':
        lines[st[0]] = '\t.reg .b32 %argus_lo<2>;\n\tcvt.u32.u64 %argus_lo0, %argus_b0;\n\tcvt.u32.u64 %argus_lo1, %argus_now;\n\t@%argus_st st.global.cs.v2.u32 [%argus_addr], {%argus_lo0, %argus_lo1};'
        del lines[st[1]]
    else:
        assert variant == 'early'
print('\n'.join(lines))
