"""Durations as Kubernetes writes them (a metav1.Duration: Go's ``time.Duration`` text,
``4h``, ``1h30m``, ``2.5s``, ``300ms``): read into seconds, for Grove's
``terminationDelay``."""

from __future__ import annotations

import re
from typing import Final

_PART: Final = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_SECONDS: Final = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}


def seconds(text: str) -> float:
    """``text`` in seconds; ValueError naming what a duration looks like when it is not one
    ("0" alone is one, as in Go)."""
    body = text.strip()
    sign = -1.0 if body.startswith("-") else 1.0
    body = body.lstrip("+-")
    if body == "0":
        return 0.0
    total, at = 0.0, 0
    for match in _PART.finditer(body):
        if match.start() != at:
            break
        total += float(match[1]) * _SECONDS[match[2]]
        at = match.end()
    if not body or at != len(body):
        raise ValueError(f'"{text}" is not a duration (such as "4h", "1h30m", "90s")')
    return sign * total
