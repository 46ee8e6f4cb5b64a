"""argus.perfetto: Argus's Chrome region traces as Perfetto protobuf traces, read back with the
perfetto package's trace protos. The real trace is the H200 Proton trace of the Triton TMA
matmul (tests/data/proton/README.md), imported by `argus trace --proton --chrome-trace`."""

import tempfile
import unittest
from pathlib import Path

from perfetto.protos.perfetto.trace.perfetto_trace_pb2 import Trace, TrackEvent

from argus import perfetto as pf
from trace_fixtures import proton_timeline



def parse(data: bytes):
    trace = Trace()
    trace.ParseFromString(data)
    tracks = {p.track_descriptor.uuid: p.track_descriptor for p in trace.packet
              if p.HasField("track_descriptor")}
    events = [p for p in trace.packet if p.HasField("track_event")]
    return tracks, events


def nested_per_track(events):
    """Every track's BEGIN/END events form a proper nesting (a stack that ends empty)."""
    stacks = {}
    for p in events:
        stack = stacks.setdefault(p.track_event.track_uuid, [])
        if p.track_event.type == TrackEvent.TYPE_SLICE_BEGIN:
            stack.append(p.timestamp)
        elif not stack or stack.pop() > p.timestamp:
            return False
    return all(not s for s in stacks.values())


class PerfettoTimeline(unittest.TestCase):
    def test_a_real_trace_keeps_every_occurrence_on_sm_cta_warp_tracks(self):
        doc = proton_timeline()
        occurrences = [e for e in doc["traceEvents"] if e.get("ph") == "X"]
        tracks, events = parse(pf.timeline(doc))
        begins = [p for p in events if p.track_event.type == TrackEvent.TYPE_SLICE_BEGIN]
        self.assertEqual(len(begins), len(occurrences))
        self.assertEqual(sorted(p.track_event.name for p in begins),
                         sorted(e["name"] for e in occurrences))
        self.assertTrue(nested_per_track(events))
        # The hierarchy: the kernel > SM > CTA > warp, every slice on a warp track.
        names = {u: t.name for u, t in tracks.items()}
        for p in begins:
            warp = tracks[p.track_event.track_uuid]
            cta = tracks[warp.parent_uuid]
            sm = tracks[cta.parent_uuid]
            self.assertTrue(names[warp.uuid].startswith("warp "))
            self.assertTrue(cta.name.startswith("CTA "))
            self.assertTrue(sm.name.startswith("SM "))
            self.assertTrue(tracks[sm.parent_uuid].name.startswith("kernel matmul_tma_proton"))
        self.assertEqual(len({t.name for t in tracks.values() if t.name.startswith("SM ")}),
                         len({e["args"]["sm"] for e in occurrences}))

    def test_occurrences_that_cross_go_to_an_overlapping_track_of_their_warp(self):
        def event(name, ts, dur):
            return {"name": name, "cat": "region", "ph": "X", "pid": 0, "tid": 0, "ts": ts,
                    "dur": dur, "args": {"sm": 3, "cta": 1, "warp": 4, "region_id": name}}
        # `load` in flight while the next one begins: they cross, and cannot nest.
        doc = {"traceEvents": [event("mainloop", 0.0, 10.0), event("mainloop/load", 1.0, 4.0),
                               event("mainloop/load", 3.0, 4.0), event("mainloop/mma", 8.0, 1.0)]}
        tracks, events = parse(pf.timeline(doc))
        self.assertTrue(nested_per_track(events))
        by_track = {}
        for p in events:
            if p.track_event.type == TrackEvent.TYPE_SLICE_BEGIN:
                by_track.setdefault(tracks[p.track_event.track_uuid].name, []).append(
                    (p.timestamp, p.track_event.name))
        self.assertEqual(by_track["warp 4"], [(0, "mainloop"), (1000, "mainloop/load"),
                                              (8000, "mainloop/mma")])
        self.assertEqual(by_track["warp 4 overlapping 1"], [(3000, "mainloop/load")])
        overlap = next(t for t in tracks.values() if t.name == "warp 4 overlapping 1")
        self.assertEqual(tracks[overlap.parent_uuid].name, "warp 4")

    def test_bad_input_says_what_is_wrong(self):
        with self.assertRaises(pf.TimelineError) as e:
            pf.timeline({"events": []})
        self.assertIn("traceEvents", str(e.exception))
        with self.assertRaises(pf.TimelineError) as e:
            pf.timeline({"traceEvents": [{"ph": "X", "cat": "region", "name": "a", "ts": 0}]})
        self.assertIn("traceEvents[0]", str(e.exception))
        with tempfile.TemporaryDirectory() as d:
            bad = Path(d) / "x.json"
            bad.write_text("{not json")
            self.assertEqual(pf.main([str(bad), "-o", str(Path(d) / "o.pftrace")]), 1)


if __name__ == "__main__":
    unittest.main()
