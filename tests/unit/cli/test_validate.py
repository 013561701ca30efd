"""``gangway validate``: admission's checks offline, one error per line, exit 1 or 0."""

from __future__ import annotations

import copy
import io
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main
from tests.support.manifests import fixture, on_scheduler
from tests.support.paths import FIXTURES

CONFIG = str(FIXTURES / "config" / "kai-default.yaml")
BINDING = fixture("topology/datacenter.yaml")


def write(tmp_path: Path, name: str, *docs: dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def inference() -> dict[str, Any]:
    pcs = fixture("podcliquesets/disaggregated-inference.yaml")
    pcs["spec"]["template"]["topologyConstraint"]["topologyName"] = "datacenter"
    return pcs


def validate(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, list[str]]:
    code = main(["validate", *args])
    out = capsys.readouterr()
    return code, out.out, out.err.splitlines()


def test_admitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = validate(
        capsys, "--config", CONFIG, write(tmp_path, "a.yaml", inference(), BINDING)
    )
    assert (code, out) == (0, "admitted: inference/llama-disagg → kai-scheduler\n")
    assert err == ['warning: not checked offline: KAI Queue "team-a" exists']


def test_rejected_with_every_reason(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcs = inference()
    cliques = pcs["spec"]["template"]["cliques"]
    cliques[0]["name"] = "Router"
    cliques[1]["spec"]["startsAfter"] = ["router"]
    cliques[2]["spec"]["minAvailable"] = 4
    code, out, err = validate(capsys, "--config", CONFIG, write(tmp_path, "a.yaml", pcs, BINDING))
    assert (code, out) == (1, "")
    assert err[0].startswith('spec.template.cliques[0].name: "Router" must be a DNS-1123 label')
    # router was renamed: pleader now starts after a clique that does not exist
    assert err[1] == (
        'spec.template.cliques[1].spec.startsAfter[0]: Not found: "router" (no such clique)'
    )
    assert err[2] == "spec.template.cliques[2].spec.minAvailable: must be <= replicas (3), is 4"


def test_unknown_scheduler(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pcs = inference()
    on_scheduler(pcs, "volcano")
    code, _, err = validate(capsys, "--config", CONFIG, write(tmp_path, "a.yaml", pcs, BINDING))
    assert (code, err) == (
        1,
        [
            'spec.template.cliques[0].spec.podSpec.schedulerName: "volcano" is not an enabled '
            "scheduler backend (enabled: default-scheduler, kai-scheduler)"
        ],
    )


def test_update_rules_with_old(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = inference()
    new = copy.deepcopy(old)
    new["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"] = "kai-scheduler"
    code, _, err = validate(
        capsys,
        "--config",
        CONFIG,
        write(tmp_path, "new.yaml", new, BINDING),
        "--old",
        write(tmp_path, "old.yaml", old),
    )
    assert code == 1
    assert err[0] == (
        "spec.template.cliques[0].spec.podSpec.schedulerName: is immutable: was unset, now "
        '"kai-scheduler"'
    )


def test_external_backend_is_skipped_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = {
        "scheduler": {"profiles": [{"name": "my-scheduler", "external": True, "default": True}]}
    }
    config_path = tmp_path / "operator.yaml"
    config_path.write_text(yaml.safe_dump(config))
    code, out, err = validate(
        capsys, "--config", str(config_path), write(tmp_path, "a.yaml", inference(), BINDING)
    )
    assert (code, out) == (0, "admitted: inference/llama-disagg → my-scheduler\n")
    assert err == [
        'skipped: validation by scheduler backend "my-scheduler": it answers only in the cluster'
    ]


def test_topology_levels_from_the_binding_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pcs = inference()
    pcs["spec"]["template"]["cliques"][1]["topologyConstraint"] = {"pack": {"required": "zone"}}
    code, _, err = validate(capsys, "--config", CONFIG, write(tmp_path, "a.yaml", pcs, BINDING))
    assert code == 1
    assert err[0].startswith(
        'spec.template.cliques[1].topologyConstraint.pack.required: "zone" is broader than '
        '"block" required by spec.template.podCliqueScalingGroups[0].topologyConstraint'
    )


def test_coscheduling_admits_a_shared_minimum_with_a_warning_and_refuses_required_packing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """disaggregated-inference requires packing for some cliques: refused, the field named;
    without packing, admitted, and each clique whose spare pods share its PodGang's one
    minimum is named in a warning."""
    config = str(FIXTURES / "config" / "coscheduling.yaml")
    pcs = on_scheduler(inference(), "scheduler-plugins-scheduler")
    code, _, err = validate(capsys, "--config", config, write(tmp_path, "a.yaml", pcs, BINDING))
    assert code == 1
    assert any(
        line.startswith("spec.template.cliques[4].topologyConstraint.pack.required: coscheduling")
        for line in err
    ), err
    template = pcs["spec"]["template"]
    for holder in [template, *template["cliques"], *template["podCliqueScalingGroups"]]:
        holder.pop("topologyConstraint", None)
    code, out, err = validate(capsys, "--config", config, write(tmp_path, "b.yaml", pcs))
    assert (code, out) == (0, "admitted: inference/llama-disagg → coscheduling\n")
    assert err, "a warning per clique with spare pods"
    assert all("(PerPodGroupMinimum)" in line for line in err), err


def test_every_podcliqueset_of_a_stream_each_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A multi-document file checks each PodCliqueSet; exit 1 if any is refused."""
    bad = inference()
    bad["metadata"]["name"] = "broken"
    bad["spec"]["template"]["cliques"][2]["spec"]["minAvailable"] = 4
    code, out, err = validate(
        capsys, "--config", CONFIG, write(tmp_path, "a.yaml", inference(), bad, BINDING)
    )
    assert code == 1
    assert out == "admitted: inference/llama-disagg → kai-scheduler\n"
    assert "inference/broken: spec.template.cliques[2].spec.minAvailable: must be <= " in "\n".join(
        err
    )
    assert all(line.startswith(("inference/llama-disagg: ", "inference/broken: ")) for line in err)


def test_reads_standard_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO(yaml.safe_dump_all([inference(), BINDING])))
    code, out, _ = validate(capsys, "--config", CONFIG, "-")
    assert (code, out) == (0, "admitted: inference/llama-disagg → kai-scheduler\n")


def test_a_file_without_a_podcliqueset_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = validate(capsys, write(tmp_path, "a.yaml", BINDING))
    assert code == 1
    assert err == [f"{tmp_path / 'a.yaml'}: expected a PodCliqueSet, found none"]


@pytest.mark.parametrize(
    "command", [["validate"], ["plan"], ["render"], ["deploy", "nats-users"], ["up"]]
)
def test_a_config_file_that_is_not_there_is_a_wrong_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Exit 2 and one line naming the option, not a traceback when the file is read."""
    missing = str(tmp_path / "operator.yaml")
    with pytest.raises(SystemExit) as ended:
        main([*command, "--config", missing, write(tmp_path, "w.yaml", inference())])
    assert ended.value.code == 2
    assert f"argument --config: {missing}: no such file" in capsys.readouterr().err
