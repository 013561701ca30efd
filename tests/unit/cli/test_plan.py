"""``gangway plan``: a YAML stream of PodGangs (and pods) on stdout, errors on stderr."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gangway_cli.main import main
from tests.support.manifests import fixture
from tests.support.paths import FIXTURES, REPO

PCS = str(FIXTURES / "podcliquesets" / "disaggregated-inference.yaml")
CONFIG = str(FIXTURES / "config" / "kai-default.yaml")
SAMPLES = REPO / "cli/src/gangway_cli/samples"


def test_podgangs_then_pods(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--config", CONFIG, PCS]) == 0
    out = capsys.readouterr()
    docs = list(yaml.safe_load_all(out.out))
    assert [d["kind"] for d in docs] == ["PodGang"] * 8
    assert docs[0]["spec"]["podgroups"][0]["podReferences"][0]["name"] == "llama-disagg-0-router-0"
    assert out.err.count("warning: ") == 3  # no ClusterTopologyBinding given

    assert main(["plan", "--pods", "--config", CONFIG, PCS]) == 0
    docs = list(yaml.safe_load_all(capsys.readouterr().out))
    assert sum(d["kind"] == "Pod" for d in docs) == 2 * (2 + 3 * (1 + 3) + 2 * (1 + 2))


def test_a_binding_in_the_same_file_resolves_topology(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    binding = fixture("topology/datacenter.yaml")
    both = tmp_path / "both.yaml"
    both.write_text(Path(PCS).read_text() + "---\n" + yaml.safe_dump(binding))
    assert main(["plan", "--config", CONFIG, str(both)]) == 0
    out = capsys.readouterr()
    assert out.err == ""
    first = next(yaml.safe_load_all(out.out))
    assert first["spec"]["topologyConstraint"] == {
        "packConstraint": {"preferred": "example.com/zone"}
    }


def test_invalid_manifest_names_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: grove.io/v1alpha1\nkind: PodCliqueSet\nmetadata: {name: x}\n"
        "spec:\n  replicas: two\n  template: {cliques: []}\n"
    )
    assert main(["plan", str(bad)]) == 1
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err.strip() == "spec.replicas: Expected `int`, got `str`"


def test_a_scheduler_the_configuration_does_not_enable_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The shipped KAI sample with a configuration enabling default-scheduler alone."""
    alone = tmp_path / "operator.yaml"
    alone.write_text("scheduler: {}\n")
    assert main(["plan", "--config", str(alone), str(SAMPLES / "kai-scheduler.yaml")]) == 1
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        'spec.template.cliques[0].spec.podSpec.schedulerName: "kai-scheduler" is not an '
        "enabled scheduler backend (enabled: default-scheduler)"
    ]


@pytest.mark.parametrize("command", ["validate", "plan", "render"])
@pytest.mark.parametrize("sample", sorted(p.name for p in SAMPLES.glob("*.yaml")))
def test_every_shipped_sample_runs_offline_as_shipped(
    command: str, sample: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No --config: the offline commands judge by every built-in backend."""
    assert main([command, str(SAMPLES / sample)]) == 0, capsys.readouterr().err


def test_a_reader_that_stops_early_is_no_error() -> None:
    """``gangway plan … | head -1``: the pipe closes under the output; exit 0, no traceback."""
    done = subprocess.run(
        f"set -o pipefail; {sys.executable} -m gangway_cli.main plan --pods --config {CONFIG} "
        f"{REPO / 'tests/fixtures/podcliquesets/scaletest-1000.yaml'} | head -1",
        shell=True,
        capture_output=True,
        text=True,
        check=False,
        executable="/bin/bash",
    )
    assert done.stdout == "---\n"
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0


def test_json_output_is_a_list_as_kubectl_prints_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "-o", "json", "--pods", "--config", CONFIG, PCS]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert (printed["apiVersion"], printed["kind"]) == ("v1", "List")
    kinds = [item["kind"] for item in printed["items"]]
    assert kinds.count("PodGang") == 8
    assert kinds.count("Pod") == 2 * (2 + 3 * (1 + 3) + 2 * (1 + 2))
