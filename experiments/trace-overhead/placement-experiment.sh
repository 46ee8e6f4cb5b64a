#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 5's overhead figures against where ptxas places
# the seed kernels' loops. Builds the trace-free and the traced (full_trace, the default compact
# layout) seed kernels, each with $PADS (default "1 2 3 4 5 6 7 8") padding blocks at the kernel
# entry (experiments/trace-overhead/placement_edits.py: the first block 6 SASS instructions, each
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
# traced build, all against the same trace-free builds. The padded builds run side by side.
# NCU=1 also profiles each build once with Nsight Compute; PLAIN=1 also runs each without the
# injection library (below).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
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
# One padded build: its PTX, its executable, its SASS and where its loops start.
build_padded() {
  local v=$1 p=$2
  python3 experiments/trace-overhead/placement_edits.py $w/$v/seed_kernel.ptx "$p" >"$w/$v$p.ptx" &&
    "$B/argus" build --program $spec --variant original --ptx "$w/$v$p.ptx" -o "$w/$v$p" \
      >"$w/$v$p.build.log" 2>&1 || { echo "build $v$p failed"; tail -5 "$w/$v$p.build.log"; return 1; }
  # Where ptxas put each kernel's inner loop (KERNEL FIRST LAST OFFSET-IN-128-BYTES).
  mkdir -p "$w/loops/$p" "$w/sass/$p"
  cuobjdump -sass "$w/$v$p/seed_kernel.cubin" >"$w/sass/$p/$v.sass" 2>&1
  python3 bench/trace_overhead/sass_waits.py --loops "$w/$v$p/seed_kernel.cubin" >"$w/loops/$p/$v"
}
# The builds run side by side (each in its own folder; the host-object cache takes concurrent
# builds), at most one per CPU.
failed=0 pids=()
for v in free "${tags[@]}"; do
  for p in $pads; do
    build_padded "$v" "$p" &
    pids+=($!)
    if [ "${#pids[@]}" -ge "$(nproc)" ]; then
      for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
      pids=()
    fi
  done
done
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
[ "$failed" = 0 ] || exit 1
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
      # PLAIN=1: both builds once more without libargus_inject.so, so the traced build's buffer
      # stays unset and it runs its record code without storing (the harness's own event-timed
      # medians; the table below pairs them with the trace-free build's, also without it).
      if [ "${PLAIN:-0}" = 1 ]; then
        for b in trace_free full_trace; do
          exe="$w/free$p/trace_overhead"
          [ $b = full_trace ] && exe="$w/$tag$p/trace_overhead"
          "$exe" --kernel "${KERNELS:-both}" --inner 8,64,512 --reps 200 --warmup 20 \
            >"$d/$b.plain.jsonl" 2>/dev/null
        done
      fi
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
# PLAIN=1's table: without the library, every traced padding against the trace-free padding whose
# inner loop starts at the same offset in a 128-byte line, both event-timed (the harness's own
# medians; with the library they would include its per-launch read-back): what the record code
# costs when nothing is stored, the loops placed alike. Medians over rounds.
if [ "${PLAIN:-0}" = 1 ]; then
  python3 - "$w" <<'PY'
import collections, json, pathlib, statistics, sys
w = pathlib.Path(sys.argv[1])
runs = collections.defaultdict(list)  # (kernel, inner, build, pad) -> event medians
for f in w.glob("runs/*/*/*/*.plain.jsonl"):
    build = "free" if f.name.startswith("trace_free") else f.parent.name.removeprefix("traced-")
    for line in f.read_text().splitlines():
        if '"median_us"' in line:
            r = json.loads(line)
            runs[(r["kernel"], r["inner"], build, f.parent.parent.name)].append(r["median_us"])
offset = {}  # (build, kernel, pad) -> the inner loop's offset in a 128-byte line
for f in w.glob("loops/*/*"):
    for line in f.read_text().splitlines():
        k = line.split()
        if len(k) == 4:
            offset.setdefault((f.name.removeprefix("traced-"), k[0], f.parent.name), k[3])
print()
print("| kernel | inner | traced build | padding | inner loop offset | trace-free us, same offset | traced us, nothing stored | + us |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for (kernel, inner, build, pad), v in sorted(runs.items(), key=lambda x: (x[0][0], x[0][1], x[0][2], int(x[0][3]))):
    if build == "free":
        continue
    at = offset.get((build, kernel, pad))
    free = [statistics.median(u) for (k, i, b, q), u in runs.items()
            if (k, i, b) == (kernel, inner, "free") and offset.get(("free", kernel, q)) == at]
    if at is None or not free:
        continue
    a, b = statistics.median(free), statistics.median(v)
    print(f"| {kernel} | {inner} | {build} | {pad} | {at} | {a:.2f} | {b:.2f} | {b - a:+.2f} |")
PY
fi
# NCU=1: each build's seed_compute at inner $NCU_INNER (default 512) once more under Nsight
# Compute (--clock-control none: the clocks as found), for what differs between a fast and a slow
# placement: cycles, clock, instructions and the warp stall reasons (per issue). The traced builds
# run there without recording: ncu's own injection replaces libargus_inject.so, so their trace
# buffer stays unset and only their code and its placement differ from the trace-free build's.
if [ "${NCU:-0}" = 1 ]; then
  mkdir -p "$w/ncu"
  for v in free "${tags[@]}"; do
  for p in $pads; do
    mkdir -p "$w/ncu/$v"
    ncu --clock-control none --kernel-name seed_compute --launch-skip 3 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
      --section InstructionStats --section LaunchStats --csv --page raw \
      "$w/$v$p/trace_overhead" --kernel compute --inner "${NCU_INNER:-512}" --reps 1 \
      --warmup 3 >"$w/ncu/$v/$p.csv" 2>"$w/ncu/$v/$p.err" ||
      { echo "ncu on $v, padding $p failed:"; tail -3 "$w/ncu/$v/$p.err"; }
  done
  done
  python3 - "$w" "${NCU_INNER:-512}" <<'PY'
import csv, pathlib, sys
w = pathlib.Path(sys.argv[1])
rows = {}  # "build/padding" -> its metrics
for f in sorted(w.glob("ncu/*/*.csv"), key=lambda f: (f.parent.name, int(f.stem))):
    lines = [l for l in f.read_text().splitlines() if l.startswith('"')]
    table = list(csv.reader(lines))
    if len(table) < 3:
        continue
    header, values = table[0], table[2]  # row 1 holds the units
    rows[f"{f.parent.name.removeprefix('traced-')}/{f.stem}"] = dict(zip(header, values))
def number(v):
    try:
        return float(v.replace(",", ""))
    except ValueError:
        return None
if rows:
    # The metrics that differ by more than 1 % between paddings, with a few always shown.
    always = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.max",
              "smsp__inst_executed.sum"]
    names = [n for n in next(iter(rows.values())) if all(number(r.get(n, "")) is not None for r in rows.values())]
    moving = []
    for n in names:
        v = [number(r[n]) for r in rows.values()]
        if n in always or (max(v) > 0 and (max(v) - min(v)) / max(abs(x) for x in v) > 0.01):
            moving.append(n)
    print()
    print("ncu, seed_compute, inner", sys.argv[2], "(build/padding; metrics that move more than 1 % across builds):")
    print("| metric | " + " | ".join(rows) + " |")
    print("| --- |" + " --- |" * len(rows))
    for n in sorted(set(moving), key=lambda n: (n not in always, n)):
        print(f"| {n} | " + " | ".join(rows[p][n] for p in rows) + " |")
PY
fi
# Every build's SASS and loop addresses come back in one file, to compare the placements whose
# durations differ.
tar czf "$out/placement-sass.tgz" -C "$w" loops sass $( [ -d "$w/ncu" ] && echo ncu)
