"""Object views decode real manifests, ignore unknown fields and round-trip without loss."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonschema
import msgspec
import pytest
import yaml

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.pods import Pod
from tests.support.crd_compat import version_schema
from tests.support.manifests import fixture, fixtures, is_subset
from tests.support.paths import DEPLOY_CRDS, UPSTREAM_GROVE_CRDS

PCS_FIXTURES = fixtures("podcliquesets")


def crd_validator(folder: Path, file: str) -> jsonschema.Draft7Validator:
    crd = yaml.safe_load((folder / file).read_text())
    return jsonschema.Draft7Validator(version_schema(crd, "v1alpha1"))


@pytest.mark.parametrize("path", PCS_FIXTURES, ids=lambda p: p.stem)
def test_podcliqueset_fixtures_are_valid_under_grove_and_our_crd(path: Path) -> None:
    manifest = yaml.safe_load(path.read_text())
    for folder in (UPSTREAM_GROVE_CRDS, DEPLOY_CRDS):
        validator = crd_validator(folder, "grove.io_podcliquesets.yaml")
        assert [e.message for e in validator.iter_errors(manifest)] == []


@pytest.mark.parametrize("path", PCS_FIXTURES, ids=lambda p: p.stem)
def test_podcliqueset_round_trip(path: Path) -> None:
    manifest = yaml.safe_load(path.read_text())
    pcs = from_object(manifest, PodCliqueSet)
    encoded = msgspec.json.encode(pcs)
    assert msgspec.json.decode(encoded, type=PodCliqueSet) == pcs
    # What we write back is what we read: nothing invented, podSpec untouched.
    assert is_subset(msgspec.json.decode(encoded), manifest)
    for clique, original in zip(
        pcs.spec.template.cliques, manifest["spec"]["template"]["cliques"], strict=True
    ):
        assert msgspec.json.decode(clique.spec.pod_spec) == original["spec"]["podSpec"]


def test_podcliqueset_defaults_follow_the_crd() -> None:
    pcs = from_object(fixture("podcliquesets/disaggregated-inference.yaml"), PodCliqueSet)
    decode = pcs.spec.template.pod_clique_scaling_groups[1]
    assert (decode.replicas, decode.min_available) == (2, 1)
    assert pcs.spec.template.cliques[0].spec.min_available is None


def test_podgang_round_trips_exactly() -> None:
    manifest = fixture("podgangs/base-gang.yaml")
    podgang = from_object(manifest, PodGang)
    assert msgspec.json.decode(msgspec.json.encode(podgang)) == manifest
    assert podgang.spec.podgroups[2].min_replicas == 2
    assert podgang.status is not None
    assert podgang.status.conditions[0].type == "Initialized"


def test_podgang_fixture_is_valid_under_grove_and_our_crd() -> None:
    manifest = fixture("podgangs/base-gang.yaml")
    for folder in (UPSTREAM_GROVE_CRDS, DEPLOY_CRDS):
        validator = crd_validator(folder, "scheduler.grove.io_podgangs.yaml")
        assert [e.message for e in validator.iter_errors(manifest)] == []


def test_unknown_fields_are_ignored() -> None:
    manifest = fixture("podgangs/base-gang.yaml")
    newer: dict[str, Any] = copy.deepcopy(manifest)
    newer["spec"]["futureField"] = {"x": 1}
    newer["spec"]["podgroups"][0]["futureField"] = True
    newer["metadata"]["managedFields"] = [{"manager": "kubectl"}]
    assert from_object(newer, PodGang) == from_object(manifest, PodGang)


def test_missing_required_field_names_its_path() -> None:
    manifest = fixture("podgangs/base-gang.yaml")
    del manifest["spec"]["podgroups"][1]["minReplicas"]
    with pytest.raises(msgspec.ValidationError, match=r"minReplicas.*\$\.spec\.podgroups\[1\]"):
        from_object(manifest, PodGang)


def test_pod_view_reads_gates_and_binding() -> None:
    pod = from_object(
        {
            "metadata": {"name": "p-0", "namespace": "ns", "labels": {"grove.io/podgang": "g"}},
            "spec": {
                "schedulerName": "kai-scheduler",
                "schedulingGates": [{"name": "grove.io/podgang-pending-creation"}],
                "containers": [{"name": "c", "image": "busybox"}],
            },
            "status": {
                "phase": "Pending",
                "conditions": [
                    {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
                ],
            },
        },
        Pod,
    )
    assert pod.is_gated("grove.io/podgang-pending-creation")
    assert not pod.is_scheduled
    assert pod.status.conditions[0].reason == "SchedulingGated"
