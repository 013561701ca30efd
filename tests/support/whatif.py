"""Running ``gangway whatif`` as a user runs it, and reading its answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml


def whatif(
    workload: Path, capacity: dict[str, Any] | None, workdir: Path, *more: str
) -> tuple[int, list[dict[str, Any]], str]:
    """Exit status, the JSON answer (empty when none) and stderr of ``gangway whatif -f
    workload --capacity <capacity as a file>`` (None: ``more`` says where the nodes come
    from), a short settle time."""
    nodes: list[str] = []
    if capacity is not None:
        path = workdir / "capacity.yaml"
        path.write_text(yaml.safe_dump(capacity))
        nodes = ["--capacity", str(path)]
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "gangway"),
            "whatif",
            "-f",
            str(workload),
            *nodes,
            "--settle",
            "3",
            "-o",
            "json",
            *more,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    answer = json.loads(done.stdout) if done.stdout.strip() else []
    return done.returncode, answer, done.stderr


def placed_and_not(answer: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """How many gangs would be placed, and the reasons of those that would not."""
    gangs = [g for workload in answer for g in workload["gangs"]]
    return sum(g["placed"] for g in gangs), sorted(g["reason"] for g in gangs if not g["placed"])
