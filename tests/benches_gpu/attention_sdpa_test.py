"""The attention script's pieces that need no GPU: its names, its NVML readings and the run the
suite's scripts share."""
import contextlib
import importlib.util
import io
import json
import os
import sys
import tempfile
import unittest

spec = importlib.util.spec_from_file_location("attention_sdpa", sys.argv.pop(1))
sdpa = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sdpa)


class ClockEventReasons(unittest.TestCase):
    def test_named_as_gpu_benchmark_names_them(self):
        self.assertEqual(sdpa.clock_event_reason_names(0), "none")
        self.assertEqual(sdpa.clock_event_reason_names(0x44), "sw_power_cap,hw_thermal_slowdown")
        self.assertEqual(sdpa.clock_event_reason_names(0x1000), "0x1000")


class NvidiaSmiLine(unittest.TestCase):
    def test_one_line_of_the_query(self):
        state = sdpa.parse_smi_line("1980, 1980, 2619, 700.00, P0, 523.41, 61, 580.65.06, 0x0000000000000004")
        self.assertEqual(state["sm_clock_mhz"], "1980")
        self.assertEqual(state["power_limit_w"], "700.00")
        self.assertEqual(state["performance_state"], "P0")
        self.assertEqual(state["power_w"], "523.41")
        self.assertEqual(state["driver_version"], "580.65.06")
        self.assertEqual(state["clock_event_reasons"], "sw_power_cap")

    def test_unsupported_fields_are_empty_and_a_short_line_is_nothing(self):
        state = sdpa.parse_smi_line("1980, 1980, 2619, [N/A], P0, [N/A], 61, 580.65.06, [N/A]")
        self.assertEqual(state["power_w"], "")
        self.assertEqual(state["clock_event_reasons"], "")
        self.assertEqual(sdpa.parse_smi_line("1980, 1980"), {})


class Fastest(unittest.TestCase):
    def test_keeps_the_backend_with_the_least_forward_plus_backward_and_notes_them_all(self):
        timings = [("torch sdpa flash", (400e-6, 0, 1), (1000e-6, 0, 1)),
                   ("torch sdpa efficient", (300e-6, 0, 1), (1500e-6, 0, 1)),
                   ("torch sdpa cudnn", (350e-6, 0, 1), (900e-6, 0, 1))]
        (label, fwd, bwd), note = sdpa.fastest(timings)
        self.assertEqual(label, "torch sdpa cudnn")
        self.assertEqual((fwd[0], bwd[0]), (350e-6, 900e-6))
        self.assertEqual(note, "flash 400+1000 us, efficient 300+1500 us, cudnn 350+900 us")


class Names(unittest.TestCase):
    def test_quick_run_measures_six_shapes(self):
        shapes = list(sdpa.shapes(True))
        self.assertEqual(len(shapes), 6)  # 3 sequence lengths, causal and not, head dim 128
        self.assertEqual(shapes[0], (16, 1024, 128, False))


class RunConfigurations(unittest.TestCase):
    """The run the other suite scripts share, on a stand-in for torch and the device readings."""

    def setUp(self):
        class OutOfMemory(RuntimeError):
            pass

        class Cuda:
            OutOfMemoryError = OutOfMemory
            synchronized = 0

            def synchronize(self):
                Cuda.synchronized += 1

            def empty_cache(self):
                pass

        class Torch:
            cuda = Cuda()

        self.torch = Torch()
        self.saved = {name: getattr(sdpa, name) for name in ("device_uuid", "device_state", "state_entry", "context")}
        sdpa.device_uuid = lambda torch: "GPU-x"
        sdpa.device_state = lambda uuid: {}
        sdpa.state_entry = lambda torch, at, uuid: {"name": f"device/state/at:{at}/manual_time", "real_time": 1.0,
                                                    "time_unit": "ms"}
        sdpa.context = lambda torch, command, idle_state, suite: {"pipescope_suite": suite}
        self.tmp = tempfile.TemporaryDirectory()

    def tearDown(self):
        for name, value in self.saved.items():
            setattr(sdpa, name, value)
        self.tmp.cleanup()

    def test_a_refused_configuration_is_its_error_entries_and_the_rest_go_on(self):
        def ok(name):
            return [name], lambda: [{"name": name + "/manual_time", "real_time": 2.0, "time_unit": "ms"}]

        def refused():
            raise self.torch.cuda.OutOfMemoryError("CUDA out of memory.\nTried to allocate 3 GiB")

        output = os.path.join(self.tmp.name, "out.json")
        with contextlib.redirect_stdout(io.StringIO()) as printed:
            sdpa.run_configurations(self.torch, output, "test", [ok("a/1"), (["b/1", "b/2"], refused), ok("c/1")])
        with open(output) as f:
            doc = json.load(f)
        self.assertEqual(doc["context"], {"pipescope_suite": "test"})
        names = [e["name"] for e in doc["benchmarks"]]
        self.assertEqual(names, ["device/state/at:warm/manual_time", "a/1/manual_time", "b/1/manual_time",
                                 "b/2/manual_time", "c/1/manual_time", "device/state/at:end/manual_time"])
        refused_entries = [e for e in doc["benchmarks"] if e["name"].startswith("b/")]
        for e in refused_entries:
            self.assertTrue(e["error_occurred"])
            self.assertEqual(e["error_message"], "CUDA out of memory.")
        self.assertIn("a/1/manual_time", printed.getvalue())
        self.assertEqual(type(self.torch.cuda).synchronized, 1)


if __name__ == "__main__":
    unittest.main()
