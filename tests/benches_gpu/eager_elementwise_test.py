"""The PyTorch-kernel script's pieces that need no GPU: its names and the bytes each op moves."""
import importlib.util
import os
import subprocess
import sys
import unittest

SCRIPT = sys.argv.pop(1)
spec = importlib.util.spec_from_file_location("eager_elementwise", SCRIPT)
sys.path.insert(0, os.path.dirname(SCRIPT))
eager = importlib.util.module_from_spec(spec)
spec.loader.exec_module(eager)


class Names(unittest.TestCase):
    def test_every_op_at_every_size_between_the_device_readings(self):
        out = subprocess.run([sys.executable, SCRIPT, "--list"], capture_output=True, text=True, check=True)
        names = out.stdout.splitlines()
        self.assertEqual(names[0], "device/state/at:warm/manual_time")
        self.assertEqual(names[-1], "device/state/at:end/manual_time")
        self.assertEqual(len(names), 2 + 9 * 7)
        self.assertIn("eager/cast_bf16_fp32/elements:1048576/manual_time", names)
        self.assertIn("eager/transpose_bf16/elements:67108864/manual_time", names)
        quick = subprocess.run([sys.executable, SCRIPT, "--list", "--quick"], capture_output=True, text=True,
                               check=True).stdout.splitlines()
        self.assertEqual(len(quick), 2 + 9 * 4)


class MovedBytes(unittest.TestCase):
    def test_read_plus_written_per_output_element(self):
        n = 1 << 20
        self.assertEqual(eager.moved_bytes("add_bf16", n), n * 6)  # two bf16 in, one out
        self.assertEqual(eager.moved_bytes("mul_fp32", n), n * 12)
        self.assertEqual(eager.moved_bytes("cast_bf16_fp32", n), n * 6)  # 2 in, 4 out
        self.assertEqual(eager.moved_bytes("silu_bf16", n), n * 4)
        self.assertEqual(eager.moved_bytes("cat_bf16", n), n * 4)  # halves in, the whole out
        # Rotary: x and a cos row shared by the 32 heads in, the product out; the half-slice.
        self.assertEqual(eager.moved_bytes("mul_bcast_bf16", n), n * (4 + 2 / 32))
        self.assertEqual(eager.moved_bytes("neg_slice_bf16", n), n * 4)

    def test_an_entry_is_the_time_per_kernel_and_its_bandwidth(self):
        e = eager.entry("add_bf16", 1 << 20, 3.0e-6, 4)
        self.assertEqual(e["name"], "eager/add_bf16/elements:1048576/manual_time")
        self.assertAlmostEqual(e["real_time"], 3.0)
        self.assertEqual(e["time_unit"], "us")
        self.assertEqual(e["bytes"], 6 * (1 << 20))
        self.assertAlmostEqual(e["bytes_per_s"], 6 * (1 << 20) / 3.0e-6)
        self.assertEqual(e["iterations"], 4 * eager.CALLS_PER_GRAPH)


if __name__ == "__main__":
    unittest.main()
