"""``gangway conformance``: which scenarios run, and how their results are told (a table,
JSON, JUnit for CI); the scenarios themselves run in tests/e2e/test_conformance.py."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from gangway_cli.conformance.command import chosen
from gangway_cli.conformance.report import Result, show
from gangway_cli.conformance.scenarios import SCENARIOS
from gangway_cli.main import main

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
