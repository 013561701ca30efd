"""deploy/crds: generated from the contracts' views, and API-compatible with Grove's CRDs
(pinned copies in third_party/grove)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
import yaml

from gangway_contracts.cliques import PodClique, PodCliqueScalingGroup
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_localcluster.crds import generated_crds
from tests.support.contract_paths import contract_paths
from tests.support.crd_compat import compat_problems, declared_paths, version_schema
from tests.support.paths import DEPLOY_CRDS, UPSTREAM_GROVE_CRDS

PAIRS = [
    ("grove.io_podcliquesets.yaml", PodCliqueSet),
    ("scheduler.grove.io_podgangs.yaml", PodGang),
    ("grove.io_podcliques.yaml", PodClique),
    ("grove.io_podcliquescalinggroups.yaml", PodCliqueScalingGroup),
]


# Where the PodCliqueSet's schema is a Kubernetes type's (from the API server's OpenAPI).
KUBERNETES_TYPES = frozenset(
    {
        "spec.template.cliques[].spec.podSpec",
        "spec.template.cliques[].spec.autoScalingConfig.metrics[]",
        "spec.template.podCliqueScalingGroups[].scaleConfig.metrics[]",
        "spec.template.resourceClaimTemplates[].templateSpec",
        "spec.podSpec",  # a PodClique's
        "spec.autoScalingConfig.metrics[]",
    }
)

# Grove's PodSpec (Kubernetes 1.35's) has workloadRef, the Workload API's alpha field that
# 1.37 replaced by schedulingGroup: a 1.37 API server drops it from a pod as well.
GONE_FROM_KUBERNETES = {
    "PodCliqueSet": [
        "spec.template.cliques[].spec.podSpec: would prune Grove's fields ['workloadRef']"
    ],
    "PodClique": ["spec.podSpec: would prune Grove's fields ['workloadRef']"],
}


# Grove's API newer than the pinned commit (no stored snapshot of Grove is newer): the
# per-component rollingUpdate of #817 (RollingUpdateConfiguration: maxUnavailable,
# progressDeadline; held by tests/integration/admission/test_webhook.py) and the PodGang's
# lastScheduled / lastReady of #792 (merged 2026-08-26).
NEWER_IN_GROVE = {
    "PodCliqueSet": [
        "spec.template.cliques[].rollingUpdate: not a field of Grove's schema",
        "spec.template.podCliqueScalingGroups[].rollingUpdate: not a field of Grove's schema",
    ],
    "PodGang": [
        "status.lastReady: not a field of Grove's schema",
        "status.lastScheduled: not a field of Grove's schema",
    ],
}


def load(path: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


@pytest.fixture(params=[name for name, _ in PAIRS])
def crds(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    return load(DEPLOY_CRDS / request.param), load(UPSTREAM_GROVE_CRDS / request.param)


def test_no_stricter_and_nothing_pruned(crds: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, upstream = crds
    kind = ours["spec"]["names"]["kind"]
    expected = NEWER_IN_GROVE.get(kind, []) + GONE_FROM_KUBERNETES.get(kind, [])
    for version in upstream["spec"]["versions"]:
        problems = list(
            compat_problems(
                version_schema(ours, version["name"]),
                version["schema"]["openAPIV3Schema"],
                kubernetes_types=KUBERNETES_TYPES,
            )
        )
        assert sorted(problems) == sorted(expected)


def test_same_names_columns_and_subresources(
    crds: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    ours, upstream = crds
    for key in ("group", "names", "scope"):
        assert ours["spec"][key] == upstream["spec"][key]
    assert ours["metadata"]["name"] == upstream["metadata"]["name"]
    ours_versions = {v["name"]: v for v in ours["spec"]["versions"]}
    for version in upstream["spec"]["versions"]:
        mine = ours_versions[version["name"]]
        for key in ("served", "storage"):
            assert mine.get(key) == version.get(key), key
        # Grove's columns, as Grove has them and in its order; Gangway may add its own
        # (a PodGang's Scheduled reason and Ready: why it is not running, at a glance).
        columns = mine.get("additionalPrinterColumns") or []
        grove = version.get("additionalPrinterColumns") or []
        assert [c for c in columns if c["name"] in {g["name"] for g in grove}] == grove
        # Every /scale Grove serves, Gangway serves: a PodClique's and a scaling group's too.
        assert mine["subresources"] == version["subresources"]


@pytest.mark.parametrize(("file", "view"), PAIRS)
def test_every_field_the_contracts_read_is_declared(file: str, view: type[msgspec.Struct]) -> None:
    crd = load(DEPLOY_CRDS / file)
    declared = set(declared_paths(version_schema(crd, "v1alpha1")))
    read = {p for p in contract_paths(view) if not p.startswith("metadata.")}
    assert read - declared == set()


def test_checker_catches_a_stricter_schema() -> None:
    upstream = version_schema(load(UPSTREAM_GROVE_CRDS / PAIRS[1][0]), "v1alpha1")
    stricter = copy.deepcopy(upstream)
    podgroup = stricter["properties"]["spec"]["properties"]["podgroups"]["items"]
    podgroup["required"].append("topologyConstraint")
    podgroup["properties"]["minReplicas"]["minimum"] = 1
    del podgroup["properties"]["podReferences"]
    stricter["properties"]["spec"]["properties"]["invented"] = {"type": "string"}
    problems = list(compat_problems(stricter, upstream))
    assert problems == [
        "spec.podgroups[]: requires ['topologyConstraint'], Grove does not",
        "spec.podgroups[].minReplicas: minimum 1 stricter than Grove's None",
        "spec.podgroups[]: would prune Grove's fields ['podReferences']",
        "spec.invented: not a field of Grove's schema",
    ]


def test_checker_allows_a_newer_kubernetes_below_a_kubernetes_type_only() -> None:
    upstream = version_schema(load(UPSTREAM_GROVE_CRDS / PAIRS[0][0]), "v1alpha1")
    newer = copy.deepcopy(upstream)
    clique = newer["properties"]["spec"]["properties"]["template"]["properties"]["cliques"]
    pod_spec = clique["items"]["properties"]["spec"]["properties"]["podSpec"]
    pod_spec["properties"]["aFieldOfTheNextKubernetes"] = {"type": "string"}
    del pod_spec["properties"]["containers"]["items"]["properties"]["ports"]["items"]["properties"][
        "protocol"
    ]["default"]
    pod_spec["required"].append("restartPolicy")
    clique["items"]["properties"]["invented"] = {"type": "string"}
    problems = list(compat_problems(newer, upstream, kubernetes_types=KUBERNETES_TYPES))
    assert problems == [
        "spec.template.cliques[].spec.podSpec: requires ['restartPolicy'], Grove does not",
        "spec.template.cliques[].invented: not a field of Grove's schema",
    ]


def test_deploy_crds_are_what_the_views_generate() -> None:
    """deploy/crds is `make crds`'s output for the views as they are (else: run it)."""
    for path, text in generated_crds().items():
        assert path.read_text() == text, f"{path.name} is stale: run make crds"


@pytest.mark.parametrize("file", [name for name, _ in PAIRS])
def test_every_field_of_ours_is_described(file: str) -> None:
    """What `kubectl explain` shows: every field Gangway's views declare has a description
    (the Kubernetes types below them are the API server's, explained by `kubectl explain
    pod.spec`)."""
    schema = version_schema(load(DEPLOY_CRDS / file), "v1alpha1")
    undescribed = [
        path
        for path, node in described_nodes(schema)
        if path != "metadata"
        and not any(path.startswith(k + ".") for k in KUBERNETES_TYPES)
        and "description" not in node
    ]
    assert undescribed == []


def described_nodes(schema: dict[str, Any], path: str = "") -> Any:
    for name, child in schema.get("properties", {}).items():
        child_path = f"{path}.{name}" if path else name
        yield child_path, child
        yield from described_nodes(child, child_path)
    if "items" in schema:
        yield from described_nodes(schema["items"], f"{path}[]")
