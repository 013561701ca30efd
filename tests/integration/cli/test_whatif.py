"""``gangway whatif``: each backend's sample on a local copy of the nodes, with its real
scheduler and Gangway's services: room for it says every gang placed (exit 0), a node too
small says why not in the one vocabulary (exit 3); and wrong input is said by field."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Final

import pytest

from gangway_contracts import why
from tests.support.whatif import placed_and_not, whatif

ROOMY: Final = {"nodes": [{"count": 8, "cpu": "64", "memory": "512Gi", "gpus": 8}]}
# One node for one pod: no sample's gang (each of two pods or more) fits.
TIGHT: Final = {"nodes": [{"count": 1, "cpu": "1", "memory": "1Gi", "gpus": 0, "maxPods": 1}]}
SAMPLES: Final = ("default-scheduler", "kai-scheduler", "coscheduling", "koordinator", "volcano")


def sample(backend: str) -> Path:
    return Path(str(resources.files("gangway_cli.samples").joinpath(f"{backend}.yaml")))


@pytest.mark.parametrize("backend", SAMPLES)
def test_a_sample_is_placed_with_room_and_said_why_not_without(
    backend: str, tmp_path: Path
) -> None:
    code, answer, said = whatif(sample(backend), ROOMY, tmp_path)
    assert code == 0, said
    placed, _ = placed_and_not(answer)
    assert placed == len(answer[0]["gangs"]) > 0
    assert all(g["nodes"] and g["domains"]["rack"] for g in answer[0]["gangs"])

    code, answer, said = whatif(sample(backend), TIGHT, tmp_path)
    assert code == 3, said
    placed, reasons = placed_and_not(answer)
    assert placed == 0
    assert reasons, answer
    assert set(reasons) <= why.SCHEDULER_REASONS, reasons


GROVE: Final = Path(__file__).parents[2] / "fixtures/grove/samples/user-guide/01_core-concepts"


@pytest.mark.parametrize(
    ("manifest", "backend"),
    [
        ("multi-node-disaggregated.yaml", "default-scheduler"),
        ("complete-inference-pipeline.yaml", "volcano"),
    ],
)
def test_grove_s_own_samples_on_a_backend_of_choice(
    manifest: str, backend: str, tmp_path: Path
) -> None:
    """Grove's published samples (pinned, tests/fixtures/grove), put on a backend with
    --backend: placed with room, each gang's reason said without."""
    path = GROVE / manifest
    code, answer, said = whatif(path, ROOMY, tmp_path, "--backend", backend)
    assert code == 0, said
    assert placed_and_not(answer) == (len(answer[0]["gangs"]), [])
    code, answer, said = whatif(path, TIGHT, tmp_path, "--backend", backend)
    assert code == 3, said
    placed, reasons = placed_and_not(answer)
    assert placed == 0
    assert set(reasons) <= why.SCHEDULER_REASONS | {why.GATED}, reasons  # scaled gangs wait
    assert set(reasons) & why.SCHEDULER_REASONS, reasons  # on a base gang the scheduler refused


def test_the_same_backend_for_another_scheduler_s_workload(tmp_path: Path) -> None:
    """--backend puts a workload on another scheduler: KAI's sample on the default one."""
    code, answer, said = whatif(
        sample("kai-scheduler"), ROOMY, tmp_path, "--backend", "default-scheduler"
    )
    assert code == 0, said
    assert placed_and_not(answer) == (len(answer[0]["gangs"]), [])


def test_a_wrong_capacity_file_is_said_by_field_and_nothing_starts(tmp_path: Path) -> None:
    wrong = {"nodes": [{"count": -1, "cpu": "lots", "gpu": 2}]}
    code, answer, said = whatif(sample("default-scheduler"), wrong, tmp_path)
    assert (code, answer) == (1, [])
    lines = said.strip().splitlines()
    assert any("nodes[0].count" in line and "greater than or equal to 0" in line for line in lines)
    assert any("nodes[0].cpu" in line and "'lots' is not a quantity" in line for line in lines)
    assert any("nodes[0].gpu" in line and "unknown field" in line for line in lines)
    assert "Traceback" not in said


def test_an_unknown_backend_is_said(tmp_path: Path) -> None:
    code, _, said = whatif(sample("default-scheduler"), ROOMY, tmp_path, "--backend", "nope")
    assert code == 1
    assert said.startswith("--backend: not one of "), said
