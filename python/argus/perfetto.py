"""Perfetto timelines of Argus region traces.

Argus writes region traces as Chrome/Perfetto JSON (``argus query --chrome-trace``,
``argus trace --chrome-trace``): one event per region occurrence on a process per SM and a
thread per CTA and warp. JSON on one thread cannot show occurrences that overlap without
nesting (an async operation still in flight when the next one begins), and flattens the SM >
CTA > warp hierarchy. This module writes the same occurrences as a Perfetto protobuf trace with
the ``perfetto`` package's trace protos: a track per SM, a child track per CTA, a child track per
warp holding its properly nested region slices, and child tracks of the warp (``overlapping
1``, ``2``, ...) for the occurrences that cross a slice already open there. The Perfetto UI and
trace processor read it.

    python -m argus.perfetto TRACE.json -o TRACE.pftrace
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Iterable, Optional

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import TrackDescriptor, TrackEvent
from perfetto.trace_builder.proto_builder import TraceProtoBuilder

_SEQUENCE = 1  # trusted_packet_sequence_id of every packet


class TimelineError(ValueError):
    """The input is not an Argus region trace; the message says what is wrong and where."""


def _occurrences(chrome: dict) -> list[dict]:
    if not isinstance(chrome, dict) or not isinstance(chrome.get("traceEvents"), list):
        raise TimelineError("not a Chrome trace: no `traceEvents` list (give the file "
                            "`argus query --chrome-trace` or `argus trace --chrome-trace` wrote)")
    out = []
    for i, e in enumerate(chrome["traceEvents"]):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") != "region":
            continue
        args = e.get("args") or {}
        try:
            begin = round(float(e["ts"]) * 1000)
            # A slice of no length would end before it begins at one timestamp: 1 ns long.
            end = max(round((float(e["ts"]) + float(e["dur"])) * 1000), begin + 1)
            out.append({"name": str(e["name"]), "begin": begin, "end": end,
                        "sm": int(args["sm"]), "cta": int(args["cta"]), "warp": int(args["warp"]),
                        "args": args})
        except (KeyError, TypeError, ValueError) as err:
            raise TimelineError(f"traceEvents[{i}]: a region event needs ts, dur and args.sm, "
                                f"args.cta, args.warp ({err!r})") from None
    if not out:
        raise TimelineError("the trace holds no region occurrence (no `cat: region` event)")
    return out


def _lanes(occurrences: list[dict]) -> list[list[dict]]:
    """Splits one warp's occurrences into lanes, each properly nested: an occurrence goes to the
    first lane where it nests in (or follows) what is open there."""
    lanes: list[list[dict]] = []
    stacks: list[list[int]] = []  # per lane: end times of the open slices
    for o in sorted(occurrences, key=lambda o: (o["begin"], -o["end"])):
        for lane, stack in zip(lanes, stacks):
            while stack and stack[-1] <= o["begin"]:
                stack.pop()
            if not stack or o["end"] <= stack[-1]:
                lane.append(o)
                stack.append(o["end"])
                break
        else:
            lanes.append([o])
            stacks.append([o["end"]])
    return lanes


def timeline(chrome: dict) -> bytes:
    """The Perfetto trace (bytes) of an Argus Chrome trace document."""
    occurrences = _occurrences(chrome)
    other = chrome.get("otherData") or {}
    builder = TraceProtoBuilder()
    uuids = iter(range(1, 1 << 62))

    def track(name: str, parent: Optional[int]) -> int:
        uuid = next(uuids)
        packet = builder.add_packet()
        packet.trusted_packet_sequence_id = _SEQUENCE
        packet.track_descriptor.uuid = uuid
        packet.track_descriptor.name = name
        if parent is not None:
            packet.track_descriptor.parent_uuid = parent
        # Children in the order they are made (SMs, CTAs, warps by number), not by name.
        packet.track_descriptor.child_ordering = TrackDescriptor.ChildTracksOrdering.EXPLICIT
        return uuid

    def slices(track_uuid: int, lane: Iterable[dict]) -> None:
        events = []
        for o in lane:
            events.append((o["begin"], 1, o))
            events.append((o["end"], 0, o))
        # At one time: ends (innermost, the latest begun, first) before begins (outermost, the
        # latest ending, first).
        order = lambda e: (e[0], e[1], -e[2]["end"] if e[1] else -e[2]["begin"])  # noqa: E731
        for ts, begin, o in sorted(events, key=order):
            packet = builder.add_packet()
            packet.trusted_packet_sequence_id = _SEQUENCE
            packet.timestamp = ts
            packet.track_event.track_uuid = track_uuid
            if begin:
                packet.track_event.type = TrackEvent.TYPE_SLICE_BEGIN
                packet.track_event.name = o["name"]
                for key in ("region_id", "iteration", "role"):
                    if key in o["args"]:
                        annotation = packet.track_event.debug_annotations.add()
                        annotation.name = key
                        annotation.string_value = str(o["args"][key])
            else:
                packet.track_event.type = TrackEvent.TYPE_SLICE_END

    kernel = track(f"kernel {other.get('kernel', '')}".strip(), None)
    by_sm: dict[int, dict[int, dict[int, list[dict]]]] = {}
    for o in occurrences:
        by_sm.setdefault(o["sm"], {}).setdefault(o["cta"], {}).setdefault(o["warp"], []).append(o)
    for sm in sorted(by_sm):
        sm_uuid = track(f"SM {sm}", kernel)
        for cta in sorted(by_sm[sm]):
            cta_uuid = track(f"CTA {cta}", sm_uuid)
            for warp in sorted(by_sm[sm][cta]):
                warp_uuid = track(f"warp {warp}", cta_uuid)
                lanes = _lanes(by_sm[sm][cta][warp])
                slices(warp_uuid, lanes[0])
                for n, lane in enumerate(lanes[1:], start=1):
                    slices(track(f"warp {warp} overlapping {n}", warp_uuid), lane)
    return builder.serialize()


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m argus.perfetto", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("trace", help="a Chrome trace Argus wrote (--chrome-trace)")
    parser.add_argument("-o", "--output", required=True, help="the Perfetto trace to write")
    args = parser.parse_args(argv)
    try:
        chrome = json.loads(Path(args.trace).read_text())
        data = timeline(chrome)
    except (OSError, json.JSONDecodeError, TimelineError) as e:
        print(f"argus.perfetto: {args.trace}: {e}", file=sys.stderr)
        return 1
    Path(args.output).write_bytes(data)
    print(f"argus.perfetto: wrote {args.output} ({len(data)} bytes)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
