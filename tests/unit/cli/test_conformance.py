"""``gangway conformance``: which scenarios run, and how their results are told (a table,
JSON, JUnit for CI); the scenarios themselves run in tests/e2e/test_conformance.py."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gangway_cli.conformance.command import chosen
from gangway_cli.conformance.report import Result, show
from gangway_cli.conformance.room import free_room, one_pod_each
from gangway_cli.conformance.scenarios import SCENARIOS
from gangway_cli.main import main

EXTERNAL = Path(__file__).parent / "conformance-external.yaml"
RESULTS = [
    Result("all-or-nothing", "pass", "room for 3: none of 4 bound", 12.5),
    Result("same-name-two-namespaces", "fail", "the second: 3 of 4 bound", 13.0),
    Result("delete-cleans-up", "error", "could not run: 503", 1.0),
    Result("podgroup-minimums", "skip", "declared unsupported: PerPodGroupMinimum", 0.1),
]


def test_scenarios_are_chosen_by_name_in_the_order_given() -> None:
    assert chosen(None) == list(SCENARIOS)
    assert chosen("delete-cleans-up, all-or-nothing") == ["delete-cleans-up", "all-or-nothing"]
    with pytest.raises(ValueError, match="nope: not a scenario"):
        chosen("all-or-nothing,nope")


def test_junit_has_a_case_per_scenario_and_the_evidence_of_each_failure() -> None:
    out = io.StringIO()
    show("kai-scheduler", RESULTS, "junit", out)
    suite = ET.fromstring(out.getvalue().split("\n", 1)[1])
    counts = [suite.get(k) for k in ("name", "tests", "failures", "errors", "skipped")]
    assert counts == ["gangway-conformance.kai-scheduler", "4", "1", "1", "1"]
    failed = suite.find("testcase[@name='same-name-two-namespaces']/failure")
    assert failed is not None
    assert failed.text == "the second: 3 of 4 bound"
    assert suite.find("testcase[@name='delete-cleans-up']/error") is not None
    skipped = suite.find("testcase[@name='podgroup-minimums']/skipped")
    assert skipped is not None, "what the backend declares it cannot do is skipped, not failed"


def test_json_and_table_carry_the_same_results() -> None:
    out = io.StringIO()
    show("volcano", RESULTS, "json", out)
    said = json.loads(out.getvalue())
    assert said["backend"] == "volcano"
    assert [r["status"] for r in said["results"]] == ["pass", "fail", "error", "skip"]
    table = io.StringIO()
    show("volcano", RESULTS, "table", table)
    assert table.getvalue().splitlines()[2].split()[:2] == ["same-name-two-namespaces", "fail"]


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--backend", "lpx"], "--backend lpx: not one of"),
        (["--backend", "volcano", "--scenarios", "nope"], "--scenarios: nope: not a scenario"),
        (["--backend", "volcano", "--backend-command", "x"], "volcano is built in"),
        (
            ["--backend", "volcano", "--workload-label", "queue"],
            "--workload-label queue: not KEY=VALUE",
        ),
        (
            ["--backend", "stub", "--config", str(EXTERNAL)],
            "--backend stub is a third-party backend (external: true): give --backend-command",
        ),
        (
            [
                "--backend",
                "stub",
                "--config",
                str(EXTERNAL),
                "--kubeconfig",
                "k",
                "--backend-command",
                "x",
            ],
            "on an existing cluster the backend runs there already",
        ),
    ],
)
def test_a_wrong_command_line_is_one_line_and_exit_2(
    argv: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["conformance", *argv]) == 2
    assert said in capsys.readouterr().err


def test_list_prints_each_promise(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "--backend", "volcano", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0] for line in lines] == list(SCENARIOS)
    assert all(len(line) > 40 for line in lines), "every scenario says what it promises"


def node(name: str, gpus: int, cpu: str = "8", **spec: Any) -> dict[str, Any]:
    ready = [{"type": "Ready", "status": "True"}]
    allocatable = {"cpu": cpu, **({"nvidia.com/gpu": str(gpus)} if gpus else {})}
    return {
        "metadata": {"name": name},
        "spec": spec,
        "status": {"allocatable": allocatable, "conditions": ready},
    }


def pod_on(name: str, **asks: str) -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": asks}}
    return {"spec": {"nodeName": name, "containers": [container]}}


def test_an_existing_clusters_room_is_what_its_pods_leave_on_nodes_that_take_pods() -> None:
    nodes = [
        node("a", 8),
        node("b", 8),
        node("cordoned", 8, unschedulable=True),
        node("tainted", 8, taints=[{"key": "k", "effect": "NoSchedule"}]),
        node("cpu-only", 0, cpu="4"),
    ]
    pods = [pod_on("a", **{"nvidia.com/gpu": "2", "cpu": "500m"}), pod_on("elsewhere", cpu="1")]
    assert free_room(nodes, pods) == {
        "a": {"nvidia.com/gpu": Decimal(6), "cpu": Decimal(7500)},
        "b": {"nvidia.com/gpu": Decimal(8), "cpu": Decimal(8000)},
        "cpu-only": {"cpu": Decimal(4000)},
    }


def test_the_pod_size_is_the_one_most_nodes_hold_exactly_once() -> None:
    # 4 fits once on c, d, e (4, 5, 7 free), twice on f (8); 5 fits once on d, e, f: as
    # many nodes, larger pods. 2 fits once on g alone.
    free = {"f": Decimal(8), "c": Decimal(4), "e": Decimal(7), "d": Decimal(5), "g": Decimal(2)}
    assert one_pod_each(free) == (Decimal(5), ["d", "e", "f"])
    assert one_pod_each({}) == (Decimal(0), [])
