"""The offline commands give one verdict: a manifest ``gangway validate`` refuses, ``plan``
and ``render`` refuse too (exit 1, the same reasons), and a field the API server would refuse
as unknown (strict field validation, kubectl's default) is refused by all three, named."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main
from tests.support.manifests import fixture

Change = Callable[[dict[str, Any]], None]


def single() -> dict[str, Any]:
    pcs = fixture("podcliquesets/single-clique.yaml")
    pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"].pop("schedulerName", None)
    return pcs


def clique(pcs: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = pcs["spec"]["template"]["cliques"][0]["spec"]
    return spec


def no_pod_spec(pcs: dict[str, Any]) -> None:
    del clique(pcs)["podSpec"]


def bad_quantity(pcs: dict[str, Any]) -> None:
    container = clique(pcs)["podSpec"]["containers"][0]
    container["resources"] = {"requests": {"cpu": "two"}}


def bad_name(pcs: dict[str, Any]) -> None:
    pcs["metadata"]["name"] = "Bad_Name"


def negative_replicas(pcs: dict[str, Any]) -> None:
    pcs["spec"]["replicas"] = -1


def misspelt(pcs: dict[str, Any]) -> None:
    clique(pcs)["minAvaliable"] = 1


def typo_for_a_required_field(pcs: dict[str, Any]) -> None:
    pcs["spec"]["replicaz"] = pcs["spec"].pop("replicas")


CASES: dict[str, tuple[Change, list[str]]] = {
    "no podSpec": (no_pod_spec, ["podSpec"]),
    "a bad quantity": (bad_quantity, ["resources.requests"]),
    "a bad name": (bad_name, ['metadata.name: "Bad_Name" is not a DNS-1123 label']),
    "replicas -1": (negative_replicas, ["spec.replicas: must be >= 0, is -1"]),
    "a misspelt field": (misspelt, ["spec.template.cliques[0].spec.minAvaliable: unknown field"]),
    "a typo for a required field": (typo_for_a_required_field, ["spec.replicaz: unknown field"]),
}


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


@pytest.mark.parametrize("case", CASES, ids=str)
def test_validate_plan_and_render_refuse_alike(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    change, said = CASES[case]
    pcs = single()
    change(pcs)
    path = tmp_path / "pcs.yaml"
    path.write_text(yaml.safe_dump(pcs))
    verdicts = {
        command: run(capsys, command, str(path)) for command in ("validate", "plan", "render")
    }
    for command, (code, err) in verdicts.items():
        assert code == 1, f"{command} admitted it:\n{err}"
        for words in said:
            assert words in err, f"{command}: {err}"
    # The same reasons, whichever command: each line of plan's is one of validate's.
    refused = {line for line in verdicts["validate"][1].splitlines() if ": " in line}
    for command in ("plan", "render"):
        lines = [line for line in verdicts[command][1].splitlines() if ": " in line]
        assert set(lines) <= refused, command
