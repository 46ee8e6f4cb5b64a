"""Unit test of paired.py on a hand-made run folder (the files the harness and the injection
library write): no GPU needed."""
import json
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import paired  # noqa: E402


def write_run(folder, durations_by_pair, warmup=1):
    """A paired run of seed_compute at inner 8: `durations_by_pair` [(own, other)] in µs, the
    first `warmup` pairs untimed; launches in the harness's order (own first in even pairs)."""
    os.makedirs(folder)
    kernels, start = [], 0
    for r, (own, other) in enumerate(durations_by_pair):
        for us in ((own, other) if r % 2 == 0 else (other, own)):
            kernels.append({"kernel": "seed_compute", "start_ns": start, "seq": -1,
                            "duration_ns": int(us * 1000)})
            start += 10**6
    kernels.append({"kernel": "other_kernel", "start_ns": 5, "seq": -1, "duration_ns": 1})
    with open(os.path.join(folder, "kernels.jsonl"), "w") as f:
        f.writelines(json.dumps(k) + "\n" for k in reversed(kernels))  # start order is restored
    with open(os.path.join(folder, "launches.jsonl"), "w") as f:
        f.write(json.dumps({"traced": True, "records": 65536, "dropped": 0}) + "\n")
    with open(folder + ".jsonl", "w") as f:
        f.write(json.dumps({"kernel": "seed_compute", "inner": 8, "warmup": warmup,
                            "reps": len(durations_by_pair) - warmup, "paired": True}) + "\n")


class Paired(unittest.TestCase):
    def test_sides_follow_the_alternating_order_and_warmups_are_dropped(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            # The warm-up pair is far off; each timed pair has own = other + 1, under a drift.
            write_run(run, [(100.0, 1.0)] + [(10.0 + k + 1, 10.0 + k) for k in range(9)])
            rows, problems = paired.summarize(run, 65536)
            self.assertEqual(problems, [])
            self.assertEqual(len(rows), 1)
            kernel, inner, free, own, diff, lo, hi = rows[0]
            self.assertEqual((kernel, inner), ("seed_compute", 8))
            self.assertAlmostEqual(free, 14.0)
            self.assertAlmostEqual(own, 15.0)
            self.assertAlmostEqual(diff, 1.0)
            self.assertLessEqual(lo, diff)
            self.assertGreaterEqual(hi, diff)

    def test_a_short_or_dropping_run_is_reported(self):
        with tempfile.TemporaryDirectory() as tmp:
            run = os.path.join(tmp, "run")
            write_run(run, [(2.0, 1.0)] * 4)
            with open(os.path.join(run, "launches.jsonl"), "w") as f:
                f.write(json.dumps({"traced": True, "records": 65000, "dropped": 536}) + "\n")
            with open(run + ".jsonl", "w") as f:
                f.write(json.dumps({"kernel": "seed_compute", "inner": 8, "warmup": 1, "reps": 9,
                                    "paired": True}) + "\n")
            rows, problems = paired.summarize(run, 65536)
            self.assertEqual(rows, [])
            self.assertEqual(len(problems), 2)
            self.assertIn("dropped", problems[0])
            self.assertIn("does not line up", problems[1])

    def test_the_median_interval_is_ordered_statistics(self):
        median, lo, hi = paired.median_interval(list(range(100)))
        self.assertEqual(median, 49.5)
        self.assertEqual((lo, hi), (40, 59))


if __name__ == "__main__":
    unittest.main()
