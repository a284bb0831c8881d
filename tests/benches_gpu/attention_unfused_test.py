"""The unfused-attention script's pieces that need no GPU: the names it measures and its entries."""
import importlib.util
import os
import subprocess
import sys
import unittest

SCRIPT = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("attention_unfused", SCRIPT)
sys.path.insert(0, os.path.dirname(SCRIPT))
unfused = importlib.util.module_from_spec(spec)
spec.loader.exec_module(unfused)


class Names(unittest.TestCase):
    def test_each_pass_of_every_configuration_between_the_device_readings(self):
        out = subprocess.run([sys.executable, SCRIPT, "--list"], capture_output=True, text=True, check=True)
        names = out.stdout.splitlines()
        self.assertEqual(names[0], "device/state/at:warm/manual_time")
        self.assertEqual(names[-1], "device/state/at:end/manual_time")
        self.assertEqual(len(names), 2 + 2 * 3 * 2 * 2)  # matrices x head widths x dropout x passes
        self.assertIn("attention_unfused/bf16/matrices:384/seq:2048/head_dim:96/dropout_percent:10/pass:backward"
                      "/manual_time", names)
        quick = subprocess.run([sys.executable, SCRIPT, "--list", "--quick"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        self.assertEqual(len(quick), 2 + 1 * 2 * 2 * 2)


class Entries(unittest.TestCase):
    def test_an_entry_is_the_time_per_pass_in_milliseconds(self):
        e = unfused.entry(unfused.name_of(128, 64, 10, "forward"), 6.56e-3, 31)
        self.assertEqual(e["name"],
                         "attention_unfused/bf16/matrices:128/seq:2048/head_dim:64/dropout_percent:10/pass:forward"
                         "/manual_time")
        self.assertAlmostEqual(e["real_time"], 6.56)
        self.assertEqual(e["time_unit"], "ms")
        self.assertEqual(e["iterations"], 31)


if __name__ == "__main__":
    unittest.main()
