"""``gangway conformance`` as a user runs it, against the real schedulers: it proves what a
backend keeps and shows what it does not, with the evidence — on KAI v0.12.0, two workloads
of one name in two namespaces are taken for one gang (KAI #2095), and the kit says so."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any


def conformance(backend: str, *scenarios: str) -> tuple[int, dict[str, Any], str]:
    """Exit status, the JSON report and stderr of ``gangway conformance``, a short settle."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "gangway"),
            "conformance",
            "--backend",
            backend,
            *(["--scenarios", ",".join(scenarios)] if scenarios else []),
            "--settle",
            "5",
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    report = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, report, done.stderr


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {r["scenario"]: r["status"] for r in report.get("results", [])}


async def test_the_default_scheduler_keeps_its_gangs_whole_and_apart() -> None:
    code, report, said = await asyncio.to_thread(
        conformance,
        "default-scheduler",
        "all-or-nothing",
        "same-name-two-namespaces",
        "delete-cleans-up",
    )
    assert code == 0, said
    assert set(statuses(report).values()) == {"pass"}, report


async def test_kai_taking_two_same_named_workloads_for_one_is_shown() -> None:
    """KAI v0.12.0 (#2095): the second workload of the name binds 3 of its 4 pods on room
    for 3 — part of a gang — because KAI counts the first one's pods for it."""
    code, report, said = await asyncio.to_thread(
        conformance, "kai-scheduler", "same-name-two-namespaces"
    )
    assert code == 3, said
    [result] = report["results"]
    assert result["status"] == "fail", result
    assert "the first: 4 of 4 bound" in result["evidence"], result
