"""What podgang dry-runs for admission: one pod of each clique, made as podgang makes it,
and where in the PodCliqueSet each field of a pod comes from."""

from __future__ import annotations

from typing import Any

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.labels import PODGANG_PENDING_CREATION_GATE
from gangway_podgang.dry_run import clique_field, sample_pods
from tests.support.manifests import fixture


def test_a_pods_fields_are_named_where_the_podcliqueset_holds_them() -> None:
    own = [{"name": "X"}, {"name": "Y"}]
    template: dict[str, Any] = {"containers": [{"name": "a", "env": own}]}
    grove = [{"name": "GROVE_PCS_NAME", "value": "p"}]
    pod: dict[str, Any] = {"spec": {"containers": [{"name": "a", "env": [*grove, *own]}]}}

    def field(pod_field: str) -> str | None:
        return clique_field(2, pod_field, pod, template)

    assert field("spec.containers[0].image") == (
        "spec.template.cliques[2].spec.podSpec.containers[0].image"
    )
    # Grove's variables come first in the pod: the template's own keep their index.
    assert field("spec.containers[0].env[2].valueFrom") == (
        "spec.template.cliques[2].spec.podSpec.containers[0].env[1].valueFrom"
    )
    assert field("spec.containers[0].env[0].value") is None  # Grove's variable
    assert field("spec.initContainers[0].image") is None  # podgang's (startup order)
    assert field("metadata.labels[app]") == "spec.template.cliques[2].labels[app]"
    assert field("metadata.annotations") == "spec.template.cliques[2].annotations"
    assert field("metadata.name") is None  # podgang's own making


def test_one_pod_of_each_clique_made_as_podgang_makes_it() -> None:
    doc = fixture("podcliquesets/disaggregated-inference.yaml")
    pcs = from_object(doc, PodCliqueSet)
    samples = sample_pods(pcs, "gangway:test")
    cliques = pcs.spec.template.cliques
    assert [at for at, _ in samples] == list(range(len(cliques)))
    for at, pod in samples:
        assert pod["metadata"]["labels"]["grove.io/podclique"].endswith(cliques[at].name)
        assert pod["metadata"]["namespace"] == pcs.metadata.namespace
        # Named by the server: an update's sample is not a pod that exists.
        assert "name" not in pod["metadata"]
        assert pod["metadata"]["generateName"].endswith(f"-{cliques[at].name}-0-")
        assert {"name": PODGANG_PENDING_CREATION_GATE} in pod["spec"]["schedulingGates"]


def test_the_samples_of_many_replicas_are_the_first_replicas_pods() -> None:
    """Ten thousand replicas sample what one does: the first replica's pods, planned alone."""
    doc = fixture("podcliquesets/disaggregated-inference.yaml")
    one = from_object({**doc, "spec": {**doc["spec"], "replicas": 1}}, PodCliqueSet)
    many = from_object({**doc, "spec": {**doc["spec"], "replicas": 10_000}}, PodCliqueSet)
    assert sample_pods(many, "gangway:test") == sample_pods(one, "gangway:test")
