"""The rules of Grove's PodCliqueSet validating webhook, case by case, as our own table.

Each case is a change to one small PodCliqueSet (shaped like the ones Grove's webhook tests
build: cliques prefill and decode, one replica each, terminationDelay 4h), Grove's verdict
as its webhook gives it, and Gangway's as ``gangway validate`` gives it (the webhook runs
the same checks). Everything Grove admits, Gangway admits. Where Grove refuses, Gangway
refuses at the same field, or admits and the case says why that is safe.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main

Manifest = dict[str, Any]
Change = Callable[[Manifest], Manifest]
ADMITTED = ""

KUBE_AND_KAI = """\
scheduler:
  profiles:
    - name: default-scheduler
    - name: kai-scheduler
"""
KAI_DEFAULT = KUBE_AND_KAI + "  defaultProfileName: kai-scheduler\n"
KUBE_ONLY = "scheduler:\n  profiles:\n    - name: default-scheduler\n"


def grove_test_podcliqueset(
    name: str = "inference", cliques: tuple[str, ...] = ("prefill", "decode")
) -> Manifest:
    return {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": 1,
            "template": {
                "terminationDelay": "4h",
                "cliqueStartupType": "CliqueStartupTypeAnyOrder",
                "cliques": [
                    {
                        "name": clique,
                        "spec": {
                            "roleName": f"dummy-{clique}-role",
                            "replicas": 1,
                            "minAvailable": 1,
                            "podSpec": {"containers": [{"name": "c", "image": "busybox"}]},
                        },
                    }
                    for clique in cliques
                ],
            },
        },
    }


def cliques(pcs: Manifest) -> list[Manifest]:
    found: list[Manifest] = pcs["spec"]["template"]["cliques"]
    return found


def group(pcs: Manifest, name: str, members: list[str], **fields: int) -> Manifest:
    pcs["spec"]["template"].setdefault("podCliqueScalingGroups", []).append(
        {"name": name, "cliqueNames": members, **fields}
    )
    return pcs


def schedulers(*names: str) -> Change:
    """Each clique's schedulerName ("": unset); a KAI queue label when KAI may be the one
    (Grove's KAI backend, like Gangway's, refuses a PodCliqueSet without a queue; its
    webhook tests fake the backend)."""

    def change(pcs: Manifest) -> Manifest:
        for clique, name in zip(cliques(pcs), names, strict=True):
            if name:
                clique["spec"]["podSpec"]["schedulerName"] = name
        pcs["metadata"]["labels"] = {"kai.scheduler/queue": "default-queue"}
        return pcs

    return change


def setting(path: str, value: object, under: str = "spec.template.cliques.0") -> Change:
    """A change setting ``path`` (dotted, list indices as numbers) below ``under``."""

    def change(pcs: Manifest) -> Manifest:
        node: Any = pcs
        *parents, last = f"{under}.{path}".split(".")
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value
        return pcs

    return change


def on_clique(path: str, value: object) -> Change:
    return setting(path, value)


def on_template(path: str, value: object) -> Change:
    return setting(path, value, under="spec.template")


@dataclass(frozen=True)
class Case:
    name: str
    change: Change
    grove: str  # the field Grove's webhook refuses at, or ADMITTED
    gangway: str  # the field Gangway refuses at, or ADMITTED
    config: str = KUBE_AND_KAI
    base: Callable[[], Manifest] = grove_test_podcliqueset
    why: str = ""  # when the verdicts differ: why Gangway's is safe


def same(name: str, change: Change, verdict: str, **kw: Any) -> Case:
    return Case(name, change, grove=verdict, gangway=verdict, **kw)


def with_names(pcs_name: str, *clique_names: str) -> Callable[[], Manifest]:
    return lambda: grove_test_podcliqueset(pcs_name, clique_names)


C0 = "spec.template.cliques[0]"
G0 = "spec.template.podCliqueScalingGroups[0]"

CREATE_CASES = [
    # Names.
    same("valid names", lambda p: group(p, "workers", ["prefill", "decode"]), ADMITTED),
    same(
        "the longest names that fit",
        lambda p: group(p, "sg", ["cliquename20charssss"]),
        ADMITTED,
        base=with_names("pcs", "cliquename20charssss"),
    ),
    same(
        "a clique name too long for the names made from it",
        lambda p: p,
        f"{C0}.name",
        base=with_names(
            "verylongpodcliquesetnamethatisverylong", "verylongpodcliquenamethatexceedslimit"
        ),
    ),
    Case(
        "a scaling group too long for the names made from it",
        lambda p: group(p, "verylongscalinggroup", ["verylongpodcliquename"]),
        grove=f"{G0}.name",
        gangway=f"{G0}.cliqueNames[0]",  # the pod name made from both, which is too long
        base=with_names("verylongpodcliquesetname", "verylongpodcliquename"),
    ),
    same("an empty clique name", on_clique("name", ""), f"{C0}.name"),
    same("a clique name that is no DNS label", on_clique("name", "prefill_worker"), f"{C0}.name"),
    same(
        "a scaling group naming a clique that does not exist",
        lambda p: group(p, "workers", ["nonexistent"]),
        f"{G0}.cliqueNames",
    ),
    # Schedulers: one per PodCliqueSet, and an enabled one.
    same("no scheduler named, default-scheduler default", schedulers("", ""), ADMITTED),
    same(
        "default-scheduler named twice",
        schedulers("default-scheduler", "default-scheduler"),
        ADMITTED,
    ),
    same("one named, one defaulted to it", schedulers("", "default-scheduler"), ADMITTED),
    same(
        "no scheduler named, kai-scheduler default",
        schedulers("", ""),
        ADMITTED,
        config=KAI_DEFAULT,
    ),
    same(
        "kai-scheduler when enabled",
        schedulers("kai-scheduler"),
        ADMITTED,
        base=with_names("inference", "prefill"),
    ),
    same(
        "two different schedulers",
        schedulers("default-scheduler", "kai-scheduler"),
        "podSpec.schedulerName",
    ),
    same(
        "one defaulted to default-scheduler, one kai-scheduler",
        schedulers("", "kai-scheduler"),
        "podSpec.schedulerName",
    ),
    same(
        "kai-scheduler when not enabled",
        schedulers("kai-scheduler"),
        "podSpec.schedulerName",
        config=KUBE_ONLY,
        base=with_names("inference", "prefill"),
    ),
    same(
        "a scheduler no backend serves",
        schedulers("volcano"),
        "podSpec.schedulerName",
        base=with_names("inference", "prefill"),
    ),
    # Counts.
    same("a clique without replicas", on_clique("spec.replicas", 0), f"{C0}.spec.replicas"),
    same("minAvailable 0", on_clique("spec.minAvailable", 0), f"{C0}.spec.minAvailable"),
    same(
        "minAvailable over replicas", on_clique("spec.minAvailable", 2), f"{C0}.spec.minAvailable"
    ),
    same(
        "a scaling group with replicas and minAvailable",
        lambda p: group(p, "workers", ["prefill", "decode"], replicas=3, minAvailable=2),
        ADMITTED,
    ),
    same(
        "a scaling group without replicas",
        lambda p: group(p, "workers", ["prefill"], replicas=0, minAvailable=0),
        f"{G0}.replicas",
    ),
    same(
        "a scaling group's minAvailable over its replicas",
        lambda p: group(p, "workers", ["prefill"], replicas=1, minAvailable=2),
        f"{G0}.minAvailable",
    ),
    # The pods.
    same("a nodeName", on_clique("spec.podSpec.nodeName", "node-1"), "podSpec.nodeName"),
    Case(
        "topologySpreadConstraints",
        on_clique(
            "spec.podSpec.topologySpreadConstraints",
            [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "ScheduleAnyway"}],
        ),
        grove="podSpec.topologySpreadConstraints",
        gangway=ADMITTED,
        why="a pod field the schedulers honour as they place the gang; nothing in Gangway "
        "depends on it being absent",
    ),
    Case(
        "an environment variable name starting with a digit",
        on_clique(
            "spec.podSpec.containers", [{"name": "c", "image": "i", "env": [{"name": "1X"}]}]
        ),
        grove="env[0].name",
        gangway=ADMITTED,
        why="Kubernetes takes any printable name without '=' since 1.34 (relaxed environment "
        "variable validation): the pod is made and runs",
    ),
    same(
        "an environment variable name with '='",
        on_clique(
            "spec.podSpec.containers", [{"name": "c", "image": "i", "env": [{"name": "A=B"}]}]
        ),
        "env[0].name",
    ),
    # Timing.
    same(
        "a terminationDelay of zero",
        on_template("terminationDelay", "0s"),
        "spec.template.terminationDelay",
    ),
    same(
        "a terminationDelay that is not a duration",
        on_template("terminationDelay", "four hours"),
        "spec.template.terminationDelay",
    ),
    same(
        "startsAfter with any-order startup (ignored by both)",
        on_clique("spec.startsAfter", ["decode"]),
        ADMITTED,
    ),
]


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], case: Case, *options: str) -> str:
    """What Gangway refuses the case for (its errors), or ADMITTED."""
    config = tmp_path / "operator.yaml"
    config.write_text(case.config)
    manifest = tmp_path / "pcs.yaml"
    manifest.write_text(yaml.safe_dump(case.change(copy.deepcopy(case.base()))))
    code = main(["validate", "--config", str(config), *options, str(manifest)])
    out = capsys.readouterr()
    if code == 0:
        return ADMITTED
    return out.err


@pytest.mark.parametrize("case", CREATE_CASES, ids=lambda c: c.name)
def test_create(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    expect(case, validate(tmp_path, capsys, case))


def with_group(pcs: Manifest) -> Manifest:
    return group(pcs, "workers", ["prefill", "decode"], replicas=2, minAvailable=1)


def grouped() -> Manifest:
    return with_group(grove_test_podcliqueset())


def reorder(pcs: Manifest) -> Manifest:
    cliques(pcs).reverse()
    return pcs


def add_router(pcs: Manifest) -> Manifest:
    cliques(pcs).append({**copy.deepcopy(cliques(pcs)[0]), "name": "router"})
    return pcs


def drop_decode(pcs: Manifest) -> Manifest:
    del cliques(pcs)[1]
    return pcs


UPDATE_CASES = [
    same("cliques reordered (any-order startup)", reorder, ADMITTED),
    same("priorityClassName changed", on_template("priorityClassName", "high"), ADMITTED),
    same("a clique added", add_router, "spec.template.cliques"),
    same("a clique removed", drop_decode, "spec.template.cliques"),
    same(
        "schedulerName changed",
        schedulers("kai-scheduler", "kai-scheduler"),
        "podSpec.schedulerName",
    ),
    Case(
        "roleName changed",
        on_clique("spec.roleName", "renamed"),
        grove=f"{C0}.spec.roleName",
        gangway=ADMITTED,
        why="Gangway does not use roleName: nothing that runs changes",
    ),
    Case(
        "a clique's minAvailable changed",
        on_clique("spec.minAvailable", 2),
        grove=f"{C0}.spec.minAvailable",
        gangway=ADMITTED,
        base=lambda: on_clique("spec.replicas", 2)(grove_test_podcliqueset()),
        why="the PodGangs' minReplicas follow and each backend updates its scheduler's group",
    ),
    same("a scaling group added", with_group, "spec.template.podCliqueScalingGroups"),
    same(
        "a scaling group's replicas changed (scaling)",
        setting("replicas", 3, under="spec.template.podCliqueScalingGroups.0"),
        ADMITTED,
        base=grouped,
    ),
    same(
        "a scaling group's minAvailable changed",
        setting("minAvailable", 2, under="spec.template.podCliqueScalingGroups.0"),
        f"{G0}.minAvailable",
        base=grouped,
    ),
    same(
        "a scaling group's cliques changed",
        setting("cliqueNames", ["prefill"], under="spec.template.podCliqueScalingGroups.0"),
        f"{G0}.cliqueNames",
        base=grouped,
    ),
]


@pytest.mark.parametrize("case", UPDATE_CASES, ids=lambda c: c.name)
def test_update(case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = tmp_path / "old.yaml"
    old.write_text(yaml.safe_dump(case.base()))
    verdict = validate(tmp_path, capsys, case, "--old", str(old))
    expect(case, verdict)


def expect(case: Case, verdict: str) -> None:
    differ = (case.gangway == ADMITTED) != (case.grove == ADMITTED)
    assert differ == bool(case.why), "say why Gangway's verdict differs from Grove's"
    if case.gangway == ADMITTED:
        assert verdict == ADMITTED
    else:
        assert case.gangway in verdict
