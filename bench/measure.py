"""What the benchmarks read from outside a process: its CPU time and peak memory."""

from __future__ import annotations

import os
from pathlib import Path


def proc_usage(pid: int) -> tuple[float, int]:
    """CPU seconds (user + system) and peak RSS in MiB of a running process."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    cpu = (int(fields[11]) + int(fields[12])) / ticks
    status = Path(f"/proc/{pid}/status").read_text()
    hwm = next(line for line in status.splitlines() if line.startswith("VmHWM"))
    return cpu, int(hwm.split()[1]) // 1024
