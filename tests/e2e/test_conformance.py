"""``gangway conformance`` as a user runs it, against the real schedulers: the kit is the one
definition of the promises below, run on every built-in backend, on two deliberately broken
third-party backends (which must fail exactly where they are broken), and on an existing
cluster where Gangway runs. What a backend does not keep is shown, not hidden: on KAI v0.12.0,
two workloads of one name in two namespaces are taken for one gang (KAI #2095)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.conformance.command import EXIT_FAILED
from gangway_cli.conformance.room import POOL_LABEL
from gangway_cli.conformance.scenarios import SCENARIOS
from gangway_localcluster.controlplane import ControlPlane
from tests.e2e.conftest import Nodes, Up
from tests.support.broken_backends import operator_config

CONFIG = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
PASS, SKIP, FAIL = "pass", "skip", "fail"
# Each built-in backend's results other than pass. A skip is what the backend declares it
# cannot keep (at admission, by field; docs/backends.md says why).
NO_QUEUES = {"queue-holds-gangs-whole": SKIP}
BUILT_IN: dict[str, dict[str, str]] = {
    "default-scheduler": {"podgroup-minimums": SKIP, **NO_QUEUES},
    "kai-scheduler": {"same-name-two-namespaces": FAIL},  # KAI #2095
    "coscheduling": {"podgroup-minimums": SKIP, "packed-in-one-rack": SKIP, **NO_QUEUES},
    "koordinator": {"podgroup-minimums": SKIP, "packed-in-one-rack": SKIP, **NO_QUEUES},
    "volcano": {"packed-in-one-rack": SKIP},
}
# Those that preempt a placed gang for a higher one (Volcano's gang plugin does not).
PREEMPTS = {"default-scheduler", "kai-scheduler", "coscheduling", "koordinator"}
# The broken backends, on the scenarios that tell them apart: drops-minimum lets a gang be
# placed in part; keys-by-name fails only where a second workload has the first one's name.
BROKEN_RESULTS: dict[str, dict[str, str]] = {
    "drops-minimum": {
        "all-or-nothing": FAIL,
        "base-gang-first": FAIL,
        "scale-out-and-in": FAIL,
        "delete-cleans-up": PASS,
    },
    "keys-by-name": {
        "all-or-nothing": PASS,
        "same-name-two-namespaces": FAIL,
        "delete-cleans-up": PASS,
    },
}


def conformance(*argv: str) -> tuple[int, dict[str, Any], str]:
    """Exit status, the JSON report and stderr of ``gangway conformance``, a short settle."""
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "gangway"),
            "conformance",
            *argv,
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


def evidence(report: dict[str, Any], scenario: str) -> str:
    return next(str(r["evidence"]) for r in report["results"] if r["scenario"] == scenario)


def expected(results: dict[str, str], scenarios: list[str]) -> tuple[dict[str, str], int]:
    """The report's statuses (pass where ``results`` says nothing) and the exit status."""
    found = {name: results.get(name, PASS) for name in scenarios}
    return found, EXIT_FAILED if FAIL in found.values() else 0


@pytest.mark.parametrize("backend", BUILT_IN)
async def test_each_built_in_backend_keeps_what_it_declares(backend: str) -> None:
    code, report, said = await asyncio.to_thread(conformance, "--backend", backend)
    found, exit_status = expected(BUILT_IN[backend], list(SCENARIOS))
    assert statuses(report) == found, said
    assert code == exit_status, said
    if backend == "kai-scheduler":  # the second workload binds 3 of its 4 pods on room for 3
        assert "the second, on room for 3: 3 of 4 bound" in evidence(
            report, "same-name-two-namespaces"
        )
    if "queue-holds-gangs-whole" not in BUILT_IN[backend]:  # the second gang said why
        assert "(OverQuota: " in evidence(report, "queue-holds-gangs-whole")
    moved = evidence(report, "priority-moves-whole-gangs")
    assert ("(Preempted: " in moved) == (backend in PREEMPTS), moved
    if "packed-in-one-rack" in BUILT_IN[backend]:  # refused at admission, by field
        assert "spec.template.topologyConstraint.pack.required" in evidence(
            report, "packed-in-one-rack"
        )


@pytest.mark.parametrize("broken", BROKEN_RESULTS)
async def test_a_broken_third_party_backend_fails_exactly_where_it_is_broken(
    broken: str, tmp_path: Path
) -> None:
    config = tmp_path / "operator.yaml"
    config.write_text(yaml.safe_dump(operator_config(broken)))
    command = f"{sys.executable} -m tests.support.broken_backends {broken}"
    scenarios = list(BROKEN_RESULTS[broken])
    code, report, said = await asyncio.to_thread(
        conformance,
        *("--backend", broken, "--config", str(config), "--backend-command", command),
        *("--scenarios", ",".join(scenarios)),
    )
    found, exit_status = expected(BROKEN_RESULTS[broken], scenarios)
    assert statuses(report) == found, said
    assert code == exit_status, said
    if broken == "drops-minimum":
        assert "3 of 4 pods bound on room for 3" in evidence(report, "all-or-nothing")


async def test_an_existing_cluster_where_gangway_runs_is_proven_on_its_nodes(
    e2e_cluster: ControlPlane, up: Up, nodes: Nodes
) -> None:
    """``--kubeconfig``: no node is made; the kit finds nodes with room for one pod each
    (this test adds seven, as a cluster would have them), labels those a scenario takes
    and gives them back unlabelled."""
    await nodes.add(7)
    scenarios = ["all-or-nothing", "podgroup-minimums", "same-name-two-namespaces"]
    code, report, said = await asyncio.to_thread(
        conformance,
        *("--backend", "default-scheduler", "--kubeconfig", str(e2e_cluster.kubeconfig)),
        *("--scenarios", ",".join(scenarios)),
    )
    found, exit_status = expected(BUILT_IN["default-scheduler"], scenarios)
    assert statuses(report) == found, said
    assert code == exit_status, said
    assert "nodes with room for one pod of" in said
    _, labelled = e2e_cluster.request("GET", f"/api/v1/nodes?labelSelector={POOL_LABEL}")
    assert labelled["items"] == [], "every node the kit took is given back unlabelled"
