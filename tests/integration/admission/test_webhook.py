"""The real API server calls the webhook over TLS (CA bundle set) and the client reads the
rejection: structural errors, an unknown scheduler, the backend's own verdict (backend-kai
over NATS), update rules, a backend that is down; the topology order read from the
cluster's ClusterTopologyBinding; rejections journaled."""

from __future__ import annotations

import asyncio
import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_kai.backend import KaiBackend
from gangway_contracts.resources import CLUSTER_TOPOLOGY_BINDINGS
from gangway_contracts.subjects import BackendOperation, Subjects
from gangway_localcluster.build import ensure_binaries
from gangway_runtime.kube import ApiResource, KubeError
from gangway_runtime.status import PODCLIQUESETS
from tests.integration.watcher.conftest import labelled
from tests.support import environment
from tests.support.admission import create, patch, registered, running_admission
from tests.support.backends import running_backend
from tests.support.broken_manifests import CASES, KEPT, field_named, single
from tests.support.kube import kube_of
from tests.support.manifests import fixture, on_scheduler
from tests.support.store import eventually, journal

CONFIG = {
    "profiles": [
        {"name": "kai-scheduler", "default": True},
        {"name": "default-scheduler", "config": {"gangScheduling": True}},
    ]
}
DENIED = 'admission webhook "podcliquesets.gangway.dev" denied the request: '
BINDINGS = ApiResource(
    CLUSTER_TOPOLOGY_BINDINGS.group, "v1alpha1", "clustertopologybindings", namespaced=False
)


def inference(namespace: str, name: str, topology: str = "datacenter") -> dict[str, Any]:
    """The inference fixture, admissible for kai-scheduler (queue team-a, a named topology)."""
    doc = labelled(fixture("podcliquesets/disaggregated-inference.yaml"), namespace, name)
    doc["spec"]["template"]["topologyConstraint"]["topologyName"] = topology
    return doc


def cliques(doc: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = doc["spec"]["template"]["cliques"]
    return found


@pytest.mark.usefixtures("queue")
async def test_the_client_reads_why(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    tmp_path: Path,
    cluster: environment.Cluster,
) -> None:
    async with (
        running_backend(api, nc, subjects, namespace, KaiBackend(), CONFIG),
        running_admission(api, nc, subjects, CONFIG, tmp_path) as admission,
        registered(api, admission, namespace),
    ):
        volcano = inference(namespace, "volcano")
        on_scheduler(volcano, "volcano")
        why = (
            'spec.template.cliques[0].spec.podSpec.schedulerName: "volcano" is not an enabled '
            "scheduler backend (enabled: default-scheduler, kai-scheduler)"
        )
        assert await create(api, volcano, namespace) == f"HTTP 422 Invalid: {DENIED}{why}"
        # What kubectl prints of it: the causes under the object's kind and name, as for the
        # API server's own validation (docs/admission.md quotes it).
        by_kubectl = copy.deepcopy(volcano)
        by_kubectl["metadata"]["name"] = "by-kubectl"
        manifest = tmp_path / "by-kubectl.yaml"
        manifest.write_text(json.dumps(by_kubectl))
        command = [str(ensure_binaries().kubectl), "--kubeconfig", str(cluster.kubeconfig)]
        done = await asyncio.to_thread(
            subprocess.run,
            [*command, "create", "-f", str(manifest)],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.stderr.strip() == f'The PodCliqueSet "by-kubectl" is invalid: {why}'

        broken = inference(namespace, "broken")
        cliques(broken)[2]["spec"]["minAvailable"] = 7
        broken["spec"]["template"]["podCliqueScalingGroups"][0]["cliqueNames"].append("nope")
        message = await create(api, broken, namespace)
        assert message.startswith(f"HTTP 422 Invalid: {DENIED}")
        assert (
            "spec.template.cliques[2].spec.minAvailable: must be <= replicas (3), is 7" in message
        )
        assert (
            'spec.template.podCliqueScalingGroups[0].cliqueNames[2]: Not found: "nope"' in message
        )

        no_queue = inference(namespace, "no-queue")
        no_queue["metadata"]["labels"].pop("kai.scheduler/queue")
        message = await create(api, no_queue, namespace)
        assert (
            f"{DENIED}metadata.labels[kai.scheduler/queue]: kai-scheduler needs a queue" in message
        )

        # A missing podSpec: the CRD requires it, before any webhook.
        no_pods = inference(namespace, "no-pods")
        cliques(no_pods)[1]["spec"].pop("podSpec")
        message = await create(api, no_pods, namespace)
        assert "spec.template.cliques[1].spec.podSpec: Required value" in message

        # Pods the API server would refuse: told now, not when podgang makes them.
        unrunnable = inference(namespace, "unrunnable")
        del cliques(unrunnable)[0]["spec"]["podSpec"]["containers"][0]["image"]
        message = await create(api, unrunnable, namespace)
        assert f"{DENIED}spec.template.cliques[0].spec.podSpec.containers[0].image: Required" in (
            message
        )

        admitted = inference(namespace, "llama")
        assert await create(api, admitted, namespace) == ""
        path = PODCLIQUESETS.path(namespace, "llama")
        assert await patch(api, path, {"spec": {"replicas": 3}}) == ""
        assert await patch(api, path, {"metadata": {"labels": {"team": "a"}}}) == ""
        changed = copy.deepcopy(admitted)
        on_scheduler(changed, "default-scheduler")
        message = await patch(api, path, {"spec": changed["spec"]})
        assert (
            f"{DENIED}spec.template.cliques[0].spec.podSpec.schedulerName: is immutable: "
            'was unset, now "default-scheduler"' in message
        )

        rejected = await eventually(
            lambda: journal(nc.jetstream(), subjects, namespace, "volcano"), bool
        )
        assert rejected == ["AdmissionRejected"]
        assert await journal(nc.jetstream(), subjects, namespace, "llama") == [
            "AdmissionRejected"  # the update
        ]


async def test_topology_order_is_the_clusters(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    """A binding that lists rack above zone makes zone the narrower level: the order is read
    from the cluster, not assumed."""
    kube = kube_of(api)
    name = f"upside-down-{namespace}"
    binding = {
        "apiVersion": BINDINGS.api_version,
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": name},
        "spec": {
            "levels": [
                {"domain": "rack", "key": "example.com/rack"},
                {"domain": "block", "key": "example.com/block"},
                {"domain": "zone", "key": "example.com/zone"},
            ]
        },
    }
    await kube.request("POST", BINDINGS.path(), body=binding)
    try:
        async with (
            running_admission(api, nc, subjects, CONFIG, tmp_path) as admission,
            registered(api, admission, namespace),
        ):
            doc = inference(namespace, "packed", topology=name)
            # Grove's order says zone is broader than rack; this cluster says the opposite.
            cliques(doc)[4]["topologyConstraint"] = {"pack": {"required": "zone"}}
            doc["spec"]["template"]["topologyConstraint"] = {
                "pack": {"required": "rack"},
                "topologyName": name,
            }
            message = await create(api, doc, namespace, dry_run=True)
            assert "topologyConstraint" not in message, message
            cliques(doc)[4]["topologyConstraint"] = {"pack": {"required": "rack"}}
            doc["spec"]["template"]["topologyConstraint"]["pack"] = {"required": "zone"}
            message = await create(api, doc, namespace, dry_run=True)
            assert (
                'spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required: "block" '
                'is broader than "zone"' in message
            )
    finally:
        await kube.request("DELETE", BINDINGS.path(name=name))


async def test_backend_down_rejects_naming_it_unless_told_to_ignore(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    doc = inference(namespace, "unchecked")
    async with (
        running_admission(
            api, nc, subjects, CONFIG, tmp_path / "closed", backend_timeout_seconds=1
        ) as admission,
        registered(api, admission, namespace),
    ):
        message = await create(api, doc, namespace, dry_run=True)
        assert (
            f'{DENIED}scheduler backend "kai-scheduler" has no running replica '
            f"({subjects.backend('kai-scheduler', BackendOperation.VALIDATE)})" in message
        )
    async with (
        running_admission(
            api, nc, subjects, CONFIG, tmp_path / "open", failure_policy="Ignore"
        ) as admission,
        registered(api, admission, namespace),
    ):
        assert await create(api, doc, namespace, dry_run=True) == ""


@pytest.mark.usefixtures("queue")
@pytest.mark.parametrize("case", CASES, ids=str)
async def test_the_cluster_refuses_what_gangway_validate_refuses(
    case: str, api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    """The broken manifests `validate`, `plan` and `render` refuse offline
    (tests/unit/cli/test_offline_verdicts.py), created as kubectl creates them (strict field
    validation) against the API server with the webhook registered: refused, naming the same
    field, whether the CRD's schema, strict decoding or the webhook says so."""
    change, said = CASES[case]
    doc = labelled(single(), namespace, "broken")
    on_scheduler(doc, "kai-scheduler")
    doc["metadata"]["labels"]["kai.scheduler/queue"] = "team-a"  # the queue fixture's
    whole = copy.deepcopy(doc)
    change(doc)
    async with (
        running_backend(api, nc, subjects, namespace, KaiBackend(), CONFIG),
        running_admission(api, nc, subjects, CONFIG, tmp_path) as admission,
        registered(api, admission, namespace),
    ):
        query = [("dryRun", "All"), ("fieldValidation", "Strict")]
        # Unbroken, it is admitted: what refuses it below is the break.
        await kube_of(api).request("POST", PODCLIQUESETS.path(namespace), query, body=whole)
        with pytest.raises(KubeError) as refused:
            await kube_of(api).request("POST", PODCLIQUESETS.path(namespace), query, body=doc)
    assert field_named(said) in str(refused.value)


@pytest.mark.usefixtures("queue")
async def test_grove_s_update_settings_are_stored_as_written(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    """Grove's update API (tests/support/broken_manifests.py KEPT) is admitted by the webhook
    and stored by the CRD as written: nothing pruned, nothing rewritten."""
    async with (
        running_backend(api, nc, subjects, namespace, KaiBackend(), CONFIG),
        running_admission(api, nc, subjects, CONFIG, tmp_path) as admission,
        registered(api, admission, namespace),
    ):
        for case, change in KEPT.items():
            doc = labelled(single(), namespace, "kept")
            on_scheduler(doc, "kai-scheduler")
            doc["metadata"]["labels"]["kai.scheduler/queue"] = "team-a"
            change(doc)
            query = [("dryRun", "All"), ("fieldValidation", "Strict")]
            answer = await kube_of(api).request(
                "POST", PODCLIQUESETS.path(namespace), query, body=doc
            )
            stored = json.loads(answer)
            assert stored["spec"].get("updateStrategy") in (
                doc["spec"].get("updateStrategy"),
                {"type": "RollingRecreate"},  # the CRD's default, as Grove's
            ), case
            sent, kept = (
                doc["spec"]["template"]["cliques"][0],
                stored["spec"]["template"]["cliques"][0],
            )
            assert kept.get("rollingUpdate") == sent.get("rollingUpdate"), case
