#!/usr/bin/env python3
"""The largest-batch search of ticktock_run.py against known memory limits."""
import os, sys, unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ticktock_run import largest_fitting  # noqa: E402


class LargestFitting(unittest.TestCase):
    def search(self, fits_up_to, start=64, limit=8192, step=8):
        tried = []

        def fits(batch):
            tried.append(batch)
            return batch <= fits_up_to

        return largest_fitting(fits, start, limit, step), tried

    def test_doubles_then_bisects_to_within_the_step(self):
        found, tried = self.search(1000)
        self.assertLessEqual(found, 1000)
        self.assertGreater(found, 1000 - 8)
        self.assertEqual(tried[:6], [64, 128, 256, 512, 1024, 768])
        self.assertTrue(all(b % 8 == 0 for b in tried))

    def test_stops_at_the_limit_when_everything_fits(self):
        found, tried = self.search(10**9, limit=500)
        self.assertEqual(found, 500)
        self.assertEqual(tried, [64, 128, 256, 500])

    def test_none_when_the_first_batch_does_not_fit(self):
        found, tried = self.search(32)
        self.assertIsNone(found)
        self.assertEqual(tried, [64])

    def test_an_exact_power_of_two_is_found(self):
        found, _ = self.search(2048)
        self.assertEqual(found, 2048)

    def test_a_failure_other_than_memory_ends_the_search(self):
        def fits(batch):
            raise RuntimeError(f"batch {batch}: exit 3")

        with self.assertRaises(RuntimeError):
            largest_fitting(fits, 64, 8192, 8)


if __name__ == "__main__":
    unittest.main()
