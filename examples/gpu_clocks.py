"""The GPU's clocks and power while a measurement runs, read by nvidia-smi every 100 ms in the
background: whether the GPU ran at its boost clock or at its power cap during the timed steps,
which decides how fast its GEMMs ran (docs/validation.md, "Measured here: H200, 2026-11-28").

    sampler = ClockSampler.start(device_uuid)   # None where nvidia-smi cannot be run
    ... timed steps ...
    summary = sampler.stop() if sampler else None
"""
import statistics
import subprocess

QUERY = "clocks.sm,clocks.mem,power.draw,clocks_event_reasons.active"


def parse_line(line):
    """(sm_mhz, memory_mhz, power_w, reasons_mask) of one line of the query, or None."""
    values = [v.strip() for v in line.split(",")]
    if len(values) != 4:
        return None
    try:
        return float(values[0]), float(values[1]), float(values[2]), int(values[3], 16)
    except ValueError:  # [N/A], [Not Supported]
        return None


def summarize(lines):
    """The samples' medians and range, and every clock-event reason seen (nvml.h's bits, OR-ed)."""
    samples = [s for s in (parse_line(line) for line in lines) if s is not None]
    if not samples:
        return None
    sm = [s[0] for s in samples]
    reasons = 0
    for s in samples:
        reasons |= s[3]
    return {
        "samples": len(samples),
        "sm_clock_mhz_median": statistics.median(sm),
        "sm_clock_mhz_min": min(sm),
        "sm_clock_mhz_max": max(sm),
        "memory_clock_mhz_median": statistics.median(s[1] for s in samples),
        "power_w_median": statistics.median(s[2] for s in samples),
        "power_w_max": max(s[2] for s in samples),
        "clock_event_reasons_mask": hex(reasons),
    }


class ClockSampler:
    def __init__(self, process):
        self._process = process

    @classmethod
    def start(cls, device="0", period_ms=100):
        try:
            process = subprocess.Popen(
                ["nvidia-smi", f"--query-gpu={QUERY}", "--format=csv,noheader,nounits", f"-lms={period_ms}",
                 "-i", device], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        except OSError:
            return None
        return cls(process)

    def stop(self):
        """Ends the sampling; the summary of what it read, or None when it read nothing."""
        self._process.terminate()
        try:
            out, _ = self._process.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            out, _ = self._process.communicate()
        return summarize(out.splitlines())
