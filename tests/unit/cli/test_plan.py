"""``gangway plan``: a YAML stream of PodGangs (and pods) on stdout, errors on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gangway_cli.main import main
from tests.support.manifests import fixture
from tests.support.paths import FIXTURES

PCS = str(FIXTURES / "podcliquesets" / "disaggregated-inference.yaml")
CONFIG = str(FIXTURES / "config" / "kai-default.yaml")


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
