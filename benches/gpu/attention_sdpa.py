#!/usr/bin/env python3
"""Attention forward and backward through PyTorch's scaled_dot_product_attention, for the
calibration suite (docs/calibration-results.md): bf16, causal and not, every fused backend this
PyTorch has (flash, memory-efficient, cuDNN) timed with CUDA events, and the fastest (forward
plus backward) kept, as a tuned framework picks it (Megatron-LM through Transformer Engine takes
cuDNN's fused attention on Hopper; plain PyTorch chose cuDNN's on an H200 too); `label` names it
and the others' times. Writes Google Benchmark JSON, as gpu_benchmark does.

Usage: attention_sdpa.py [--quick] [-o FILE] [--list]
Without PyTorch or without a CUDA device: one "no GPU: ..." line on stderr, no file, exit 0.
--list prints the names it would measure, one per line, as --benchmark_list_tests does (no GPU
needed); while measuring, every finished entry prints a line that starts with its name.
Python 3 standard library and torch only.
"""
import argparse
import datetime
import json
import os
import socket
import subprocess
import sys
import time

# Attention heads per GPU as the bundled LLaMA-7B/8B-class models have them at TP 1
# (models/bundled/*.json); the fit keys on sequence length and head dimension.
HEADS = 32
# Tokens per measurement: batch = TOKENS // seq (at least 1), a micro-batch of a 7B-class run.
TOKENS = 16384
SEQ_LENGTHS = [1024, 2048, 4096, 8192, 16384, 32768]
QUICK_SEQ_LENGTHS = [1024, 4096, 16384]
HEAD_DIMS = [64, 128, 256]
QUICK_HEAD_DIMS = [128]
WARMUP = 3
MIN_SECONDS = 0.2  # measured time per benchmark, as Google Benchmark's default order of magnitude
MAX_ITERATIONS = 50
# FlashAttention's FLOP count for the backward pass is 2.5x the forward (Dao 2023, section 4.1).
BACKWARD_FLOP_RATIO = 2.5


# nvml.h's clock-event (formerly throttle) reason bits, named as gpu_benchmark names them.
CLOCK_EVENT_REASONS = [(0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
                       (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
                       (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
                       (0x100, "display_clock_setting")]
# What nvidia-smi is asked, in this order, and the keys the readings get (the units are stripped).
SMI_FIELDS = [("clocks.sm", "sm_clock_mhz"), ("clocks.max.sm", "sm_clock_max_mhz"),
              ("clocks.mem", "memory_clock_mhz"), ("power.limit", "power_limit_w"), ("pstate", "performance_state"),
              ("power.draw", "power_w"), ("temperature.gpu", "temperature_c"), ("driver_version", "driver_version")]


def clock_event_reason_names(mask):
    if mask == 0:
        return "none"
    names = [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]
    rest = mask & ~sum(bit for bit, _ in CLOCK_EVENT_REASONS)
    return ",".join(names + ([hex(rest)] if rest else []))


def parse_smi_line(line):
    """One line of `nvidia-smi --query-gpu=<SMI_FIELDS>,clocks_event_reasons.active --format=csv,noheader,nounits`."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != len(SMI_FIELDS) + 1:
        return {}
    state = {key: ("" if value in ("[N/A]", "N/A", "[Not Supported]") else value)
             for (_, key), value in zip(SMI_FIELDS, values)}
    try:
        state["clock_event_reasons"] = clock_event_reason_names(int(values[-1], 16))
    except ValueError:
        state["clock_event_reasons"] = ""
    return state


def device_state(uuid):
    """NVML readings of the GPU (pynvml when importable, else nvidia-smi); {} when neither answers."""
    try:
        import pynvml
        pynvml.nvmlInit()
        h = pynvml.nvmlDeviceGetHandleByUUID(uuid) if uuid else pynvml.nvmlDeviceGetHandleByIndex(0)
        reasons = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        driver = pynvml.nvmlSystemGetDriverVersion()
        return {"sm_clock_mhz": str(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)),
                "sm_clock_max_mhz": str(pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)),
                "memory_clock_mhz": str(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM)),
                "power_limit_w": f"{pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000:g}",
                "performance_state": f"P{pynvml.nvmlDeviceGetPerformanceState(h)}",
                "power_w": f"{pynvml.nvmlDeviceGetPowerUsage(h) / 1000:g}",
                "temperature_c": str(pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)),
                "clock_event_reasons": clock_event_reason_names(reasons(h)),
                "driver_version": driver.decode() if isinstance(driver, bytes) else driver}
    except Exception:  # pynvml missing or refusing: ask the driver's own tool
        pass
    query = ",".join(field for field, _ in SMI_FIELDS)
    # Drivers before the rename (535) know only clocks_throttle_reasons.
    for reasons in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
        try:
            out = subprocess.run(["nvidia-smi", f"--query-gpu={query},{reasons}", "--format=csv,noheader,nounits",
                                  "-i", uuid or "0"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return {}
        if out.returncode == 0 and out.stdout.strip():
            return parse_smi_line(out.stdout.splitlines()[0])
    return {}


def state_entry(torch, at, uuid):
    """device/state/at:<at>, as gpu_benchmark writes it: NVML read while matmuls keep the GPU busy
    (an idle GPU drops its clocks within milliseconds)."""
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(400):  # about half a second at H100 speed, queued before NVML is read
        torch.matmul(a, a)
    stop.record()
    time.sleep(0.2)
    state = device_state(uuid)
    stop.synchronize()
    name = f"device/state/at:{at}/manual_time"
    out = {"name": name, "run_name": name, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
           "threads": 1, "iterations": 1, "real_time": start.elapsed_time(stop), "cpu_time": 0, "time_unit": "ms"}
    for key in ("sm_clock_mhz", "memory_clock_mhz", "power_w", "temperature_c"):
        try:
            out[key] = float(state.get(key, ""))
        except ValueError:
            pass
    if state.get("clock_event_reasons"):
        out["label"] = "clock_event_reasons " + state["clock_event_reasons"]
    return out


def no_gpu(reason):
    print(f"no GPU: {reason}; nothing measured", file=sys.stderr)
    return 0


def suite_arguments(description, quick_help, default_output):
    """The suite scripts' command line: --quick, -o FILE, --list."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("-o", "--output", default=default_output, help="the JSON file to write")
    parser.add_argument("--list", action="store_true", help="print the names it would measure and exit")
    return parser.parse_args()


def print_listing(names):
    """--list: the names it would measure, between the device readings, as it writes them."""
    print("device/state/at:warm/manual_time")
    for name in names:
        print(name)
    print("device/state/at:end/manual_time")


def cuda_torch():
    """PyTorch with device 0 current, or None after the suite's one "no GPU" line."""
    try:
        import torch
    except ImportError as e:
        no_gpu(f"PyTorch is not importable ({e})")
        return None
    if not torch.cuda.is_available():
        no_gpu("torch.cuda.is_available() is False")
        return None
    torch.cuda.set_device(0)
    return torch


def write_results(path, doc):
    """The Google Benchmark JSON document, written whole or not at all."""
    with open(path + ".tmp", "w") as out:
        json.dump(doc, out, indent=2)
    os.replace(path + ".tmp", path)


def backends(torch):
    """(label, context manager factory) per backend, preferred first, for this PyTorch."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel  # PyTorch >= 2.3
    except ImportError:
        def legacy(flash, efficient):
            return lambda: torch.backends.cuda.sdp_kernel(
                enable_flash=flash, enable_math=False, enable_mem_efficient=efficient)
        return [("torch sdpa flash", legacy(True, False)), ("torch sdpa efficient", legacy(False, True))]
    out = [("torch sdpa flash", lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)),
           ("torch sdpa efficient", lambda: sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION))]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        out.append(("torch sdpa cudnn", lambda: sdpa_kernel(SDPBackend.CUDNN_ATTENTION)))
    return out


def time_op(torch, op, prepare=None):
    """Seconds per call of op(), CUDA events around each call; prepare() runs untimed before."""
    for _ in range(WARMUP):
        if prepare:
            prepare()
        op()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    gpu_s, wall_s, iterations = 0.0, 0.0, 0
    while iterations < MAX_ITERATIONS and (gpu_s < MIN_SECONDS or iterations < 3):
        if prepare:
            prepare()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        start.record()
        op()
        stop.record()
        stop.synchronize()
        wall_s += time.perf_counter() - t0
        gpu_s += start.elapsed_time(stop) * 1e-3
        iterations += 1
    return gpu_s / iterations, wall_s / iterations, iterations


def shapes(quick):
    """(batch, seq, head_dim, causal) of every measurement, in order."""
    for head_dim in QUICK_HEAD_DIMS if quick else HEAD_DIMS:
        for seq in QUICK_SEQ_LENGTHS if quick else SEQ_LENGTHS:
            for causal in (False, True):
                yield max(1, TOKENS // seq), seq, head_dim, causal


def params_of(batch, seq, head_dim, causal):
    return f"batch:{batch}/heads:{HEADS}/seq:{seq}/head_dim:{head_dim}/causal:{int(causal)}"


def fastest(timings):
    """The (label, forward timing, backward timing) with the least forward + backward GPU time, and a
    note of every backend's times; timings are time_op()'s (seconds per call first)."""
    best = min(timings, key=lambda t: t[1][0] + t[2][0])
    note = ", ".join(f"{label.removeprefix('torch sdpa ')} {fwd[0] * 1e6:.0f}+{bwd[0] * 1e6:.0f} us"
                     for label, fwd, bwd in timings)
    return best, note


def measure(torch, batch, seq, head_dim, causal):
    """Forward and backward entries for one shape, with the fastest backend that runs it."""
    import torch.nn.functional as F
    shape = (batch, HEADS, seq, head_dim)
    q, k, v = (torch.randn(shape, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    grad = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    forward_flops = 4.0 * batch * seq * seq * head_dim * HEADS / (2 if causal else 1)
    params = params_of(batch, seq, head_dim, causal)
    failures = []
    timings = []
    for label, kernel in backends(torch):
        try:
            with kernel():
                def forward():
                    with torch.no_grad():
                        F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                fwd = time_op(torch, forward)
                state = {}

                def prepare():
                    state["out"] = F.scaled_dot_product_attention(q, k, v, is_causal=causal)

                def backward():
                    torch.autograd.grad(state["out"], (q, k, v), grad)
                bwd = time_op(torch, backward, prepare)
        except RuntimeError as e:  # "No available kernel": try the next backend
            failures.append(f"{label}: {str(e).splitlines()[0] if str(e) else type(e).__name__}")
            torch.cuda.synchronize()
            continue
        timings.append((label, fwd, bwd))
    if timings:
        (label, fwd, bwd), note = fastest(timings)
        label = f"{label} (fastest of {note})"
        return [entry(f"attention/forward/{params}", label, fwd, forward_flops),
                entry(f"attention/backward/{params}", label, bwd, BACKWARD_FLOP_RATIO * forward_flops)]
    message = "; ".join(failures) or "no backend"
    return [error_entry(f"attention/{p}/{params}", message) for p in ("forward", "backward")]


def entry(name, label, timing, flops):
    gpu_s, wall_s, iterations = timing
    full = name + "/manual_time"
    return {"name": full, "run_name": full, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
            "threads": 1, "iterations": iterations, "real_time": gpu_s * 1e6, "cpu_time": wall_s * 1e6,
            "time_unit": "us", "label": label, "flops": flops, "flops_per_s": flops / gpu_s}


def error_entry(name, message):
    full = name + "/manual_time"
    return {"name": full, "run_name": full, "run_type": "iteration", "repetitions": 1, "repetition_index": 0,
            "threads": 1, "error_occurred": True, "error_message": message, "iterations": 0,
            "real_time": 0, "cpu_time": 0, "time_unit": "us"}


def run_configurations(torch, output, suite, configurations, width=56):
    """The other suite scripts' run: the device readings around every configuration's entries, each
    printed as it comes, and the JSON written at the end. `configurations` holds (names, measure):
    measure() gives the configuration's entries; one this PyTorch or GPU refuses (a RuntimeError, out
    of memory) gives an error entry for each of its names, and the rest go on."""
    command = " ".join(sys.argv)
    uuid = device_uuid(torch)
    idle_state = device_state(uuid)
    benchmarks = []

    def report(e):
        if e.get("error_occurred"):
            shown = e["error_message"]
        else:
            shown = f"{e['real_time']:.3f} {e['time_unit']}"
            if "bytes_per_s" in e:
                shown += f"  {e['bytes_per_s'] / 1e9:.0f} GB/s"
        print(f"{e['name']:<{width}} {shown}", flush=True)
        benchmarks.append(e)

    report(state_entry(torch, "warm", uuid))
    for names, measure in configurations:
        try:
            for e in measure():
                report(e)
        except (RuntimeError, torch.cuda.OutOfMemoryError) as e:
            torch.cuda.synchronize()
            message = str(e).splitlines()[0] if str(e) else type(e).__name__
            for name in names:
                report(error_entry(name, message))
        torch.cuda.empty_cache()
    report(state_entry(torch, "end", uuid))
    write_results(output, {"context": context(torch, command, idle_state, suite), "benchmarks": benchmarks})


def device_uuid(torch):
    uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    return f"GPU-{uuid}" if uuid is not None else ""


def context(torch, command, idle_state, suite="attention"):
    props = torch.cuda.get_device_properties(0)
    keys = {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "host_name": socket.gethostname(),
        "executable": os.path.abspath(sys.argv[0]),
        "num_cpus": os.cpu_count() or 0,
        "library_build_type": "release",
        "pipescope_suite": suite,
        "gpu_name": props.name,
        "gpu_uuid": device_uuid(torch),
        "compute_capability": f"{props.major}.{props.minor}",
        "sm_count": str(props.multi_processor_count),
        "memory_bytes": str(props.total_memory),
        "l2_cache_bytes": str(getattr(props, "L2_cache_size", "")),
        "torch_version": torch.__version__,
        "cuda_runtime_version": torch.version.cuda or "",
        "command": command,
    }
    # The NVML keys of gpu_benchmark's context, read at the start (idle), empty when unknown.
    for _, key in SMI_FIELDS:
        keys[key] = idle_state.get(key, "")
    for key in ("power_w", "temperature_c", "clock_event_reasons"):
        keys[key] = idle_state.get(key, "")
    return keys


def main():
    args = suite_arguments(__doc__.splitlines()[0], "fewer sequence lengths and head dimensions", "attention.json")
    if args.list:
        print_listing(f"attention/{p}/{params_of(batch, seq, head_dim, causal)}/manual_time"
                      for batch, seq, head_dim, causal in shapes(args.quick) for p in ("forward", "backward"))
        return 0
    command = " ".join([sys.argv[0]] + sys.argv[1:])
    torch = cuda_torch()
    if torch is None:
        return 0
    uuid = device_uuid(torch)
    idle_state = device_state(uuid)
    benchmarks = []

    def report(entries):
        for r in entries:
            shown = r.get("error_message") or f"{r['real_time']:.1f} {r['time_unit']}  {r.get('label', '')}"
            print(f"{r['name']:<80} {shown}", flush=True)
        benchmarks.extend(entries)

    report([state_entry(torch, "warm", uuid)])
    for batch, seq, head_dim, causal in shapes(args.quick):
        report(measure(torch, batch, seq, head_dim, causal))
        torch.cuda.empty_cache()
    report([state_entry(torch, "end", uuid)])
    write_results(args.output, {"context": context(torch, command, idle_state), "benchmarks": benchmarks})
    return 0


if __name__ == "__main__":
    sys.exit(main())
