#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 5's overhead figures against where ptxas places
# the seed kernels' loops. Builds the trace-free and the traced (full_trace, the default compact
# layout) seed kernels, each with $PADS (default "1 2 3 4 5 6 7 8") padding blocks at the kernel
# entry (bench/trace_overhead/placement_edits.py: the first block 6 SASS instructions, each
# further one 3, so 1..8 put the loops at every 16-byte offset within a 128-byte line, checked
# with cuobjdump for ptxas 13.0), and measures every build like
# bench/trace_overhead/run.sh (CUPTI medians of 200 launches after 20 warm-ups; $KERNELS:
# compute|memory|both, default both), $ROUNDS rounds (default 2). Prints per kernel and inner
# size the trace-free and traced medians over the paddings (min / median / max) and the
# overhead of the medians: the spread of the trace-free builds is the resolution of any
# overhead taken against one trace-free build. A second table pairs each traced padding with the
# trace-free one whose inner loop starts at the same offset in a 128-byte line
# (bench/trace_overhead/sass_waits.py --loops): the two builds' inner loops placed alike; a third
# lists every build's loop addresses and duration ($OUT/placement-sass.tgz: every build's SASS).
# $TRACED (default "default") lists the traced
# builds to compare, each `default` (the trace pass's defaults) or KEY=VALUE[,KEY=VALUE] pass
# options (e.g. TRACED="default record_place=begin"): one table row per kernel, inner size and
# traced build, all against the same trace-free builds.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
gpu_setup
gpu_build build.log argus argus_inject
spec=bench/trace_overhead/argus.yaml
w=/tmp/placement
rm -rf "$w"; mkdir -p "$w"
"$B/argus" build --program $spec --variant trace_free -o $w/free >/dev/null || exit 1
traced_builds="${TRACED:-default}"
tags=()
for t in $traced_builds; do
  tag="traced-${t//[^a-zA-Z0-9]/_}" options=()
  if [ "$t" != default ]; then
    IFS=, read -ra kv <<<"$t"
    for o in "${kv[@]}"; do options+=(--pass-option "$o"); done
  fi
  "$B/argus" build --program $spec --variant full_trace "${options[@]}" -o "$w/$tag" >/dev/null || exit 1
  tags+=("$tag")
done
pads="${PADS:-1 2 3 4 5 6 7 8}"
for v in free "${tags[@]}"; do
  for p in $pads; do
    python3 bench/trace_overhead/placement_edits.py $w/$v/seed_kernel.ptx "$p" >"$w/$v$p.ptx" &&
      "$B/argus" build --program $spec --variant original --ptx "$w/$v$p.ptx" -o "$w/$v$p" \
        >"$w/$v$p.build.log" 2>&1 || { echo "build $v$p failed"; tail -5 "$w/$v$p.build.log"; exit 1; }
    # Where ptxas put each kernel's inner loop (KERNEL FIRST LAST OFFSET-IN-128-BYTES).
    mkdir -p "$w/loops/$p" "$w/sass/$p"
    cuobjdump -sass "$w/$v$p/seed_kernel.cubin" >"$w/sass/$p/$v.sass" 2>&1
    python3 bench/trace_overhead/sass_waits.py --loops "$w/$v$p/seed_kernel.cubin" \
      >"$w/loops/$p/$v" || exit 1
  done
done
for round in $(seq "${ROUNDS:-2}"); do
  for p in $pads; do
    d="$w/runs/$round/$p"
    mkdir -p "$d"
    for tag in "${tags[@]}"; do
      d="$w/runs/$round/$p/$tag"
      mkdir -p "$d"
      seed_run "$d/trace_free" "$w/free$p/trace_overhead"
      seed_run "$d/full_trace" "$w/$tag$p/trace_overhead"
      python3 bench/trace_overhead/summarize.py "$d" 2>"$d.check" | grep -E '^seed_' >"$d.lines"
      grep -v '^trace_free:' "$d.check" &&
        echo "(round $round, padding $p, $tag: traced records incomplete)"
    done
  done
done
python3 - "$w" <<'PY'
import collections, pathlib, statistics, sys
w = pathlib.Path(sys.argv[1])
free, traced = collections.defaultdict(list), collections.defaultdict(list)
by_pad = collections.defaultdict(list)  # (build, kernel, inner, pad) -> its runs (free: every tag's)
for f in sorted((w / "runs").glob("*/*/*.lines")):
    tag, pad = f.stem, f.parent.name
    for line in f.read_text().splitlines():
        kernel, inner, a, b = line.split()[:4]
        free[(kernel, int(inner))].append(float(a))
        traced[(kernel, int(inner), tag)].append(float(b))
        by_pad[("free", kernel, int(inner), pad)].append(float(a))
        by_pad[(tag, kernel, int(inner), pad)].append(float(b))
offset = {}  # (build, kernel, pad) -> the inner loop's offset in a 128-byte line
outer = {}  # (build, kernel, pad) -> the outermost loop's first address
for f in w.glob("loops/*/*"):
    build, pad = f.name, f.parent.name
    for line in f.read_text().splitlines():  # every loop, the shortest first
        fields = line.split()
        if len(fields) == 4:
            offset.setdefault((build, fields[0], pad), int(fields[3]))
            outer[(build, fields[0], pad)] = int(fields[1], 16)
def spread(v):
    return f"{min(v):.2f} / {statistics.median(v):.2f} / {max(v):.2f}"
print("| kernel | inner | traced build | trace-free us (min / median / max over paddings and rounds) | traced us | + us (medians) | trace-free spread (max - min) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (kernel, inner, tag), b in sorted(traced.items()):
    a = free[(kernel, inner)]
    print(f"| {kernel} | {inner} | {tag.removeprefix('traced-')} | {spread(a)} | {spread(b)} | "
          f"{statistics.median(b) - statistics.median(a):+.2f} | {max(a) - min(a):.2f} |")
# Matched placement: each traced padding against the trace-free padding whose inner loop starts at
# the same offset in a 128-byte line (the paddings give both builds every 16-byte offset), each
# side its median over rounds; the spread over the pairs is this comparison's resolution.
print()
print("| kernel | inner | traced build | + us, inner loops at the same offset (min / median / max over offsets) | pairs | spread (max - min) |")
print("| --- | --- | --- | --- | --- | --- |")
for kernel, inner, tag in sorted(traced):
    pads = {p for (b, k, i, p) in by_pad if b == tag and k == kernel and i == inner}
    diffs = []
    for p in sorted(pads):
        at = offset.get((tag, kernel, p))
        match = sorted(q for (b, k, q), o in offset.items() if b == "free" and k == kernel and
                       o == at and ("free", kernel, inner, q) in by_pad)
        if at is None or not match:
            continue
        # Several trace-free paddings at this offset (PADS beyond 8): their median.
        free_at = statistics.median(statistics.median(by_pad[("free", kernel, inner, q)])
                                    for q in match)
        diffs.append(statistics.median(by_pad[(tag, kernel, inner, p)]) - free_at)
    if diffs:
        print(f"| {kernel} | {inner} | {tag.removeprefix('traced-')} | {min(diffs):+.2f} / "
              f"{statistics.median(diffs):+.2f} / {max(diffs):+.2f} | {len(diffs)} | "
              f"{max(diffs) - min(diffs):.2f} |")
    else:
        print(f"| {kernel} | {inner} | {tag.removeprefix('traced-')} | no padding pairs with "
              f"matching loop offsets | 0 | |")
# Every build: where its loops start and its median over rounds, to look for what placement
# moves the duration.
print()
print("| kernel | inner | build | padding | inner loop offset | outer loop first address | us (median over rounds) |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for (build, kernel, inner, pad), v in sorted(by_pad.items(), key=lambda x: (x[0][1], x[0][2], x[0][0], int(x[0][3]))):
    first = outer.get((build, kernel, pad))
    print(f"| {kernel} | {inner} | {build.removeprefix('traced-')} | {pad} | "
          f"{offset.get((build, kernel, pad), '?')} | {'?' if first is None else f'{first:#x}'} | "
          f"{statistics.median(v):.2f} |")
PY
# Every build's SASS and loop addresses come back in one file, to compare the placements whose
# durations differ.
tar czf "$out/placement-sass.tgz" -C "$w" loops sass
