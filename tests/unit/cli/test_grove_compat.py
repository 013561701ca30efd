"""Grove's own published samples and e2e manifests (tests/fixtures/grove, pinned): every one is
planned and rendered with the pods Grove would make, and validated: admitted, or refused only
for a Grove feature Gangway does not provide, with the field and what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main
from tests.support.grove_manifests import INVALID_FOR_GROVE_TOO, MANIFESTS, name, podcliqueset

# Grove's own e2e configuration enables KAI beside the default scheduler, which stays default.
CONFIG = """\
apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
scheduler:
  profiles:
    - name: kai-scheduler
    - name: default-scheduler
"""

# What Gangway refuses, and why: a Grove feature it does not provide (grove_features.py).
REFUSED: dict[str, str] = {
    "e2e/yaml/auto-mnnvl/mnnvl-comprehensive-mix.yaml": "grove.io/mnnvl-group",
    "e2e/yaml/auto-mnnvl/mnnvl-cpu-with-annotation.yaml": "grove.io/mnnvl-group",
    "e2e/yaml/auto-mnnvl/mnnvl-gpu-default.yaml": "grove.io/mnnvl-group",
    "e2e/yaml/auto-mnnvl/mnnvl-gpu-invalid.yaml": "grove.io/mnnvl-group",
    "e2e/yaml/upgrade.yaml": "cliqueStartupType",
    "e2e/yaml/workload3.yaml": "cliqueStartupType",
    "e2e/yaml/workload4.yaml": "cliqueStartupType",
    "e2e/yaml/workload5.yaml": "cliqueStartupType",
    "e2e/yaml/workload6.yaml": "cliqueStartupType",
    "e2e/yaml/workload-resource-sharing.yaml": "resourceSharing",
    "samples/simple/simple1.yaml": "autoScalingConfig",
    "samples/simple/simple2-explicit-startup-order.yaml": "cliqueStartupType",
    "samples/simple/simple3-explicit-startup-order.yaml": "cliqueStartupType",
}


def pods_grove_makes(pcs: dict[str, Any]) -> int:
    """Counted from the manifest the way Grove's user guide counts them: per PodCliqueSet
    replica, every standalone clique's replicas, and every scaling group's replicas times
    its cliques' replicas."""
    template = pcs["spec"]["template"]
    replicas = {c["name"]: c["spec"].get("replicas") or 1 for c in template["cliques"]}
    grouped = 0
    for group in template.get("podCliqueScalingGroups", []):
        members = sum(replicas.pop(name) for name in group["cliqueNames"])
        grouped += group.get("replicas", 1) * members
    return int(pcs["spec"].get("replicas", 0)) * (sum(replicas.values()) + grouped)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def config(tmp_path: Path) -> str:
    path = tmp_path / "operator.yaml"
    path.write_text(CONFIG)
    return str(path)


def test_every_grove_manifest_is_here() -> None:
    assert len(MANIFESTS) == 58
    assert {*REFUSED, *INVALID_FOR_GROVE_TOO} <= {name(p) for p in MANIFESTS}


@pytest.mark.parametrize("path", MANIFESTS, ids=name)
def test_planned_with_the_pods_grove_makes(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "plan", "--pods", "--config", config, str(path))
    assert code == 0, err
    kinds = [d["kind"] for d in yaml.safe_load_all(out) if d]
    assert kinds.count("Pod") == pods_grove_makes(podcliqueset(path))


@pytest.mark.parametrize("path", MANIFESTS, ids=name)
def test_validated_admitted_or_refused_for_a_missing_feature(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "validate", "--config", config, str(path))
    if invalid := INVALID_FOR_GROVE_TOO.get(name(path)):
        assert code == 1
        assert f"{invalid}: Required value" in err
        return
    refused = REFUSED.get(name(path), "admitted")
    if refused == "admitted":
        assert (code, out.startswith("admitted: ")) == (0, True), err
        return
    assert code == 1
    errors = [line for line in err.splitlines() if not line.startswith(("warning", "skipped"))]
    assert errors, err
    for line in errors:
        assert "Gangway" in line, line
        assert "Grove's operator" in line, line
    assert any(refused in line for line in errors), err


@pytest.mark.parametrize(
    "path",
    [p for p in MANIFESTS if name(p) not in {*REFUSED, *INVALID_FOR_GROVE_TOO}],
    ids=name,
)
def test_rendered_with_every_pod_prepared(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "render", "--config", config, str(path))
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == pods_grove_makes(podcliqueset(path))
    assert all(p["spec"]["schedulingGates"] for p in pods)
