"""Grove's own published samples and e2e manifests (tests/fixtures/grove, pinned): every one is
planned and rendered with the pods Grove would make, and validated: admitted, or refused only
for a Grove feature Gangway does not provide, with the field and what is missing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_cli.main import main
from gangway_podgang.startup import INIT_CONTAINER
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
    "e2e/yaml/workload-resource-sharing.yaml": "resourceSharing",
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


ADMITTED = [p for p in MANIFESTS if name(p) not in {*REFUSED, *INVALID_FOR_GROVE_TOO}]


@pytest.mark.parametrize("path", ADMITTED, ids=name)
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
    "path", [p for p in MANIFESTS if name(p) in {*REFUSED, *INVALID_FOR_GROVE_TOO}], ids=name
)
def test_what_validate_refuses_plan_and_render_refuse(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """No answer for what the cluster would not take: exit 1, the same reasons."""
    _, _, refused = run(capsys, "validate", "--config", config, str(path))
    for command in ("plan", "render"):
        code, out, err = run(capsys, command, "--config", config, str(path))
        assert (code, out) == (1, ""), command
        assert err.splitlines()[0] in refused, command


@pytest.mark.parametrize("path", ADMITTED, ids=name)
def test_rendered_with_every_pod_prepared(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "render", "--config", config, str(path))
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    pods = [d for d in docs if d["kind"] == "Pod"]
    assert len(pods) == pods_grove_makes(podcliqueset(path))
    assert all(p["spec"]["schedulingGates"] for p in pods)


def pods_grove_would_make(pcs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What Grove's operator puts on each pod it makes for ``pcs``, from its user guide's
    naming and discovery rules alone (not from Gangway's planner): name → the hostname,
    subdomain, labels and Grove variables (values as the kubelet resolves them)."""
    meta, template = pcs["metadata"], pcs["spec"]["template"]
    pcs_name, namespace = meta["name"], meta.get("namespace") or "default"
    cliques = {c["name"]: c["spec"].get("replicas") or 1 for c in template["cliques"]}
    groups = template.get("podCliqueScalingGroups", [])
    grouped = {n for g in groups for n in g["cliqueNames"]}
    found: dict[str, dict[str, Any]] = {}
    minimum = {
        c["name"]: c["spec"].get("minAvailable") or c["spec"].get("replicas") or 1
        for c in template["cliques"]
    }
    startup = template.get("cliqueStartupType", "CliqueStartupTypeAnyOrder")
    order = [c["name"] for c in template["cliques"]]
    group_of = {n: g for g in groups for n in g["cliqueNames"]}

    def parents(clique: str) -> list[str]:
        if startup == "CliqueStartupTypeInOrder":
            i = order.index(clique)
            return order[i - 1 : i] if i else []
        if startup == "CliqueStartupTypeExplicit":
            spec = template["cliques"][order.index(clique)]["spec"]
            return list(spec.get("startsAfter", []))
        return []

    def waits(r: int, clique: str, scaled: tuple[str, int, dict[str, Any]] | None) -> list[str]:
        """Grove's startsAfter of a clique instance: within its own gang only."""
        found: list[str] = []
        for parent in parents(clique):
            if scaled is not None:
                fqn, k, group = scaled
                if parent in group["cliqueNames"]:
                    found.append(f"{fqn}-{k}-{parent}={minimum[parent]}")
            elif parent in group_of:
                group = group_of[parent]
                for j in range(group.get("minAvailable", 1)):
                    name = f"{pcs_name}-{r}-{group['name']}-{j}-{parent}"
                    found.append(f"{name}={minimum[parent]}")
            else:
                found.append(f"{pcs_name}-{r}-{parent}={minimum[parent]}")
        return found

    def add(
        r: int, podclique: str, replicas: int, podgang: str, after: list[str], **group: str
    ) -> None:
        for i in range(replicas):
            env = {
                "GROVE_PCS_NAME": pcs_name,
                "GROVE_PCS_INDEX": str(r),
                "GROVE_PCLQ_NAME": podclique,
                "GROVE_HEADLESS_SERVICE": f"{pcs_name}-{r}.{namespace}.svc.cluster.local",
                "GROVE_PCLQ_POD_INDEX": str(i),
                **group,
            }
            found[f"{podclique}-{i}"] = {
                "hostname": f"{podclique}-{i}",
                "subdomain": f"{pcs_name}-{r}",
                "podgang": podgang,
                "env": env,
                "waits": after,
            }

    for r in range(int(pcs["spec"].get("replicas", 0))):
        for clique, replicas in cliques.items():
            if clique not in grouped:
                podclique = f"{pcs_name}-{r}-{clique}"
                add(r, podclique, replicas, f"{pcs_name}-{r}", waits(r, clique, None))
        for group in groups:
            fqn = f"{pcs_name}-{r}-{group['name']}"
            group_minimum = group.get("minAvailable", 1)
            template_pods = sum(cliques[n] for n in group["cliqueNames"])
            for k in range(group.get("replicas", 1)):
                base = k < group_minimum
                gang = f"{pcs_name}-{r}" if base else f"{fqn}-{k - group_minimum}"
                for clique in group["cliqueNames"]:
                    add(
                        r,
                        f"{fqn}-{k}-{clique}",
                        cliques[clique],
                        gang,
                        waits(r, clique, None if base else (fqn, k, group)),
                        GROVE_PCSG_NAME=fqn,
                        GROVE_PCSG_TEMPLATE_NUM_PODS=str(template_pods),
                        GROVE_PCSG_INDEX=str(k),
                    )
    return found


def _resolved(pod: dict[str, Any], env: list[dict[str, Any]]) -> dict[str, str]:
    """Grove's variables of one container as the kubelet resolves them (label fieldRefs)."""
    found: dict[str, str] = {}
    for var in env:
        if not var["name"].startswith("GROVE_"):
            break  # Grove's come first; the template's own follow
        if "valueFrom" in var:
            label = var["valueFrom"]["fieldRef"]["fieldPath"][len("metadata.labels['") : -2]
            found[var["name"]] = pod["metadata"]["labels"][label]
        else:
            found[var["name"]] = var["value"]
    return found


@pytest.mark.parametrize("path", ADMITTED, ids=name)
def test_each_pod_contains_what_grove_puts_in_it(
    path: Path, config: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not only as many pods as Grove makes: the same names, hostnames, subdomains, gangs
    and Grove variables in every container and init container, one headless Service per
    replica selecting its pods, one PodClique per clique instance, and a startup-order init
    container waiting on what Grove's would (each through a Service of its ready pods)."""
    code, out, err = run(capsys, "plan", "--pods", "--config", config, str(path))
    assert code == 0, err
    docs = [d for d in yaml.safe_load_all(out) if d]
    pods = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Pod"}
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    grove = pods_grove_would_make(podcliqueset(path))
    assert sorted(pods) == sorted(grove)
    # One PodClique per clique instance, named as the pods' GROVE_PCLQ_NAME says.
    cliques = sorted(d["metadata"]["name"] for d in docs if d["kind"] == "PodClique")
    assert cliques == sorted({want["env"]["GROVE_PCLQ_NAME"] for want in grove.values()})
    for pod_name, want in grove.items():
        pod = pods[pod_name]
        spec, pod_labels = pod["spec"], pod["metadata"]["labels"]
        assert (spec["hostname"], spec["subdomain"]) == (want["hostname"], want["subdomain"])
        assert pod_labels["grove.io/podgang"] == want["podgang"]
        assert services[spec["subdomain"]]["spec"]["selector"].items() <= pod_labels.items()
        own = [c for c in spec.get("initContainers", []) if c["name"] == INIT_CONTAINER]
        for container in [*spec["containers"], *spec.get("initContainers", [])]:
            if container not in own:
                assert _resolved(pod, container["env"]) == want["env"], container["name"]
        ns = pod["metadata"]["namespace"]
        waited = [a.replace(f".{ns}.svc.cluster.local=", "=") for c in own for a in c["args"]]
        assert waited == want["waits"], pod_name
        for wait in waited:
            ready = services[wait.split("=")[0]]["spec"]
            assert ready["publishNotReadyAddresses"] is False
            assert ready["selector"]["grove.io/podclique"] == wait.split("=")[0]
