"""Edits of the seed compute kernel's full_trace PTX for scripts/gpu/record-layout-experiment.sh
(issue 5: where the tracing overhead goes). Usage: record_layout_edits.py FULL_TRACE.ptx VARIANT
  nostore  both record stores removed (the floor: everything else of the instrumentation stays)
  early    the end marker's leader election, slot clamp, record address and sequence number are
           computed at the begin marker, so the end marker is timer read -> stores
  early16  early, and one 16-byte store (begin and end low 32 bits, meta, iteration) instead of two
  early8   early, and one 8-byte store (begin and end low 32 bits) only
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
