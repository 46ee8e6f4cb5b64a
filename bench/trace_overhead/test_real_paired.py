"""Unit test of real_paired.py on hand-made run folders (the files libargus_inject.so and the
program write): no GPU needed."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import real_paired  # noqa: E402

KERNEL = "_ZN7cutlass13device_kernelIvEEvv"


def write_run(runs, name, durations_us, stdout, traced=True, dropped=0):
    folder = os.path.join(runs, name)
    os.makedirs(folder)
    with open(os.path.join(folder, "kernels.jsonl"), "w") as f:
        start = 0
        # An initialization kernel first (other kernels are not paired), then the kernel's launches.
        f.write(json.dumps({"kernel": "init", "start_ns": 1, "end_ns": 2}) + "\n")
        for us in durations_us:
            start += 10**6
            f.write(json.dumps({"kernel": KERNEL, "start_ns": start,
                                "end_ns": start + int(us * 1000)}) + "\n")
    with open(os.path.join(folder, "launches.jsonl"), "w") as f:
        for _ in durations_us:
            f.write(json.dumps({"kernel": KERNEL, "traced": traced and name.startswith("full"),
                                "records": 10, "dropped": dropped}) + "\n")
    with open(os.path.join(folder, "stdout.txt"), "w") as f:
        f.write(stdout)


def summary(runs, *extra):
    done = subprocess.run([sys.executable, os.path.join(HERE, "real_paired.py"), "--kernel",
                           KERNEL, *extra, runs], capture_output=True, text=True)
    return done.returncode, json.loads(done.stdout) if done.stdout.strip() else done.stderr


OUT = "  Disposition: Passed\n  Avg runtime: {} ms\n  GFLOPS: {}\n"


class RealPairedTest(unittest.TestCase):
    def test_pairs_launches_of_each_round(self):
        with tempfile.TemporaryDirectory() as runs:
            for r in (1, 2):
                write_run(runs, f"trace_free-{r}", [10, 10, 10], OUT.format(0.01 * r, 900))
                write_run(runs, f"full_trace-{r}", [11, 12, 11], OUT.format(0.02, 800 + r))
            rc, s = summary(runs)
            self.assertEqual(rc, 0, s)
            self.assertEqual(s["pairs"], 6)
            self.assertEqual(s["added_median_ns"], 1000)
            self.assertEqual(s["trace_free_median_ns"], 10000)
            self.assertTrue(s["results_equal"])
            self.assertEqual(s["result_lines"], 3)

    def test_a_changed_result_or_untraced_launch_is_a_problem(self):
        with tempfile.TemporaryDirectory() as runs:
            write_run(runs, "trace_free-1", [10, 10], OUT.format(0.01, 900))
            write_run(runs, "full_trace-1", [11, 11], "  Disposition: Failed\n", dropped=3)
            rc, s = summary(runs)
            self.assertEqual(rc, 1)
            self.assertFalse(s["results_equal"])
            self.assertTrue(any("dropped" in p for p in s["problems"]), s["problems"])

    def test_result_grep_compares_only_matching_lines(self):
        with tempfile.TemporaryDirectory() as runs:
            write_run(runs, "trace_free-1", [10], "Disposition: Passed\nseed 1\n")
            write_run(runs, "full_trace-1", [11], "Disposition: Passed\nseed 2\n")
            self.assertEqual(summary(runs)[0], 1)
            rc, s = summary(runs, "--result-grep", "Disposition")
            self.assertEqual(rc, 0, s)
            self.assertEqual(s["result_lines"], 1)

    def test_median_interval_holds_the_median(self):
        median, lo, hi = real_paired.median_interval(list(range(100)))
        self.assertEqual(median, 49.5)
        self.assertLessEqual(lo, median)
        self.assertGreaterEqual(hi, median)


if __name__ == "__main__":
    unittest.main()
