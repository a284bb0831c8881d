"""gpu_clocks.py's reading of nvidia-smi's lines, without a GPU."""
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import gpu_clocks  # noqa: E402


class Summary(unittest.TestCase):
    def test_medians_range_and_every_reason_seen(self):
        lines = ["1980, 3201, 520.5, 0x0000000000000000",
                 "1485, 3201, 699.0, 0x0000000000000004",
                 "1755, 3201, 640.0, 0x0000000000000000",
                 "[N/A], 3201, [N/A], [N/A]", ""]
        s = gpu_clocks.summarize(lines)
        self.assertEqual(s["samples"], 3)
        self.assertEqual(s["sm_clock_mhz_median"], 1755)
        self.assertEqual((s["sm_clock_mhz_min"], s["sm_clock_mhz_max"]), (1485, 1980))
        self.assertEqual(s["power_w_median"], 640.0)
        self.assertEqual(s["power_w_max"], 699.0)
        self.assertEqual(s["clock_event_reasons_mask"], "0x4")

    def test_nothing_read_is_none(self):
        self.assertIsNone(gpu_clocks.summarize([]))
        self.assertIsNone(gpu_clocks.summarize(["No devices were found"]))

    def test_without_nvidia_smi_there_is_no_sampler(self):
        path = os.environ.get("PATH", "")
        os.environ["PATH"] = "/nonexistent"
        try:
            self.assertIsNone(gpu_clocks.ClockSampler.start("0"))
        finally:
            os.environ["PATH"] = path


if __name__ == "__main__":
    unittest.main()
