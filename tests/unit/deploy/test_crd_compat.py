"""deploy/crds stay API-compatible with Grove's CRDs (pinned copies in third_party/grove)."""

from __future__ import annotations

import copy
from typing import Any

import msgspec
import pytest
import yaml

from gangway_contracts.grove import PodCliqueSet, PodGang
from tests.support.contract_paths import contract_paths
from tests.support.crd_compat import compat_problems, declared_paths, version_schema
from tests.support.paths import DEPLOY_CRDS, UPSTREAM_GROVE_CRDS

PAIRS = [
    ("grove.io_podcliquesets.yaml", PodCliqueSet),
    ("scheduler.grove.io_podgangs.yaml", PodGang),
]


def load(path: Any) -> dict[str, Any]:
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    return doc


@pytest.fixture(params=[name for name, _ in PAIRS])
def crds(request: pytest.FixtureRequest) -> tuple[dict[str, Any], dict[str, Any]]:
    return load(DEPLOY_CRDS / request.param), load(UPSTREAM_GROVE_CRDS / request.param)


def test_no_stricter_and_nothing_pruned(crds: tuple[dict[str, Any], dict[str, Any]]) -> None:
    ours, upstream = crds
    for version in upstream["spec"]["versions"]:
        problems = list(
            compat_problems(
                version_schema(ours, version["name"]), version["schema"]["openAPIV3Schema"]
            )
        )
        assert problems == []


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
        for key in ("served", "storage", "subresources", "additionalPrinterColumns"):
            assert mine.get(key) == version.get(key), key


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
