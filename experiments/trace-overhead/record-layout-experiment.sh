#!/usr/bin/env bash
# Runs ON the GPU machine (carry .debs): issue 5's record-layout experiment. Builds the seed
# kernel's trace_free and full_trace variants, then PTX edits of the full trace
# (experiments/trace-overhead/record_layout_edits.py: no stores, end-marker work moved to the begin
# marker, one 16-byte or one 8-byte store, with or without the streaming cache hint, the halves
# stored at the markers that know them (split), the end marker's stores deferred to the next
# begin (deferred)). $VARIANTS picks them; also `compact`, the trace pass's own
# record_layout=compact lowering with the place taken at the end marker (not an edit), and
# `compact+EDIT`, edits of it (experiments/trace-overhead/compact_edits.py; those edits are of the
# lowering as of commit 1db3ecc and refuse today's); `default`, the trace pass's defaults, and
# `default+EDIT[+EDIT...]`, compact_edits.py's edits of those, chained (`wide`, `constload`, `tidx`,
# `eon`, `direct`, `entryonly`, `late`, `noexit`...);
# `V@PAD`, variant V with PAD padding blocks at each kernel's entry (placement_edits.py: to put
# its loops where the trace-free build has them, checked with sass_waits.py --loops). $KERNELS
# picks compute|memory|both. Prints how many stores make a later instruction wait for their
# register reads (bench/trace_overhead/sass_waits.py, no GPU needed), and measures each against
# trace_free like bench/trace_overhead/run.sh (CUPTI kernel durations under libargus_inject.so,
# medians of 200 launches after 20 warm-ups), two alternating rounds; with PAIRED=1 each variant's
# launches are instead paired with the trace-free build's in one process (paired.py).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/gpu/lib.sh"
gpu_setup
gpu_build build.log argus argus_inject
spec=bench/trace_overhead/argus.yaml
w=/tmp/record-layout
rm -rf "$w"; mkdir -p "$w"
"$B/argus" build --program $spec --variant trace_free -o $w/free >/dev/null || exit 1
echo "trace_free loops (kernel first last offset): $(python3 bench/trace_overhead/sass_waits.py --loops $w/free/seed_kernel.cubin | tr '\n' ' ')"
"$B/argus" build --program $spec --variant full_trace --pass-option record_layout=full -o $w/full >/dev/null || exit 1
# `compact` is not an edit: the trace pass's own record_layout=compact lowering with the place
# taken at the end marker, the base compact_edits.py edits (its records are
# expanded by the injection library, so summarize.py checks them like the full trace's).
"$B/argus" build --program $spec --variant full_trace --pass-option record_layout=compact \
  --pass-option record_place=end \
  -o $w/compact >/dev/null || exit 1
"$B/argus" build --program $spec --variant full_trace -o $w/default >/dev/null || exit 1
variants="${VARIANTS:-nostore early16 early8 full+wb early16+wb early8+wb}"
# chain PTX EDIT[+EDIT...]: compact_edits.py's edits one after the other.
chain() {
  local ptx="$1" first="${2%%+*}" rest=
  case "$2" in *+*) rest="${2#*+}" ;; esac
  if [ -z "$rest" ]; then python3 experiments/trace-overhead/compact_edits.py "$ptx" "$first"
  else python3 experiments/trace-overhead/compact_edits.py "$ptx" "$first" | chain /dev/stdin "$rest"; fi
}
for v in $variants; do
  pad=
  case "$v" in *@*) pad="${v##*@}" ;; esac
  name="${v%@*}"
  case "$name" in
    compact|default) edit="cat $w/$name/seed_kernel.ptx" ;;
    default+*) edit="chain $w/default/seed_kernel.ptx ${name#default+}" ;;
    compact+*) edit="python3 experiments/trace-overhead/compact_edits.py $w/compact/seed_kernel.ptx ${name#compact+}" ;;
    *) edit="python3 experiments/trace-overhead/record_layout_edits.py $w/full/seed_kernel.ptx $name" ;;
  esac
  if [ -n "$pad" ] || { [ "$v" != compact ] && [ "$v" != default ]; }; then
    $edit | if [ -n "$pad" ]; then python3 experiments/trace-overhead/placement_edits.py /dev/stdin "$pad"; else cat; fi > "$w/$v.ptx" &&
      "$B/argus" build --program $spec --variant original --ptx "$w/$v.ptx" -o "$w/$v" >"$w/$v.build.log" 2>&1 ||
      { echo "build $v failed"; tail -5 "$w/$v.build.log"; }
  fi
  for k in seed_compute seed_memory; do
    echo "$v $k: $(python3 bench/trace_overhead/sass_waits.py "$w/$v/seed_kernel.cubin" $k | tail -1)"
  done
  echo "$v loops (kernel first last offset): $(python3 bench/trace_overhead/sass_waits.py --loops "$w/$v/seed_kernel.cubin" | tr '\n' ' ')"
done
if [ "${PAIRED:-0}" = 1 ]; then
  # Each variant's launches paired with the trace-free build's in one process (harness --pair,
  # bench/trace_overhead/paired.py): the medians of the pairs' differences, with their 95 %
  # confidence intervals, instead of differences of separate runs' medians.
  for round in 1 2; do
    mkdir -p $w/pairs/$round
    for v in $variants; do
      seed_pair "$w/pairs/$round/$v" "$w/$v/trace_overhead" "$w/free/seed_kernel.cubin"
      echo "== $v (round $round, paired)"
      # The lowering's own records (default, padded or not) must all be there; edits' are not.
      case "$v" in default | default@*) expect=$((128 * 8 * 64)) ;; *) expect=0 ;; esac
      python3 bench/trace_overhead/paired.py --expect-records $expect "$w/pairs/$round/$v" | tail -n +2
    done
  done
  exit 0
fi
# Edited variants write records summarize.py does not expect (none, or 8/16-byte ones): it says so
# on stderr; the durations are what this experiment compares.
for round in 1 2; do
  mkdir -p $w/runs/$round
  seed_run $w/runs/$round/trace_free $w/free/trace_overhead
  for v in full $variants; do
    d="$w/runs/$round/$v"
    mkdir -p $d
    seed_run "$d/full_trace" "$w/$v/trace_overhead"
    cp -r $w/runs/$round/trace_free $w/runs/$round/trace_free.jsonl "$d/"
    echo "== $v (round $round)"
    python3 bench/trace_overhead/summarize.py "$d" 2>"$d.check" | grep -E '^seed_'
    # The lowered compact layout must decode complete, like the full trace.
    if [ "${v%%+*}" = compact ] || [ "${v%%+*}" = default ] || [ "$v" = full ]; then grep -v '^trace_free:' "$d.check" || echo "$v records complete"; fi
  done
done
