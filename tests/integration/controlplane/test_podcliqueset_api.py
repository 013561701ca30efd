"""The generated PodCliqueSet CRD (deploy/crds) on the real API server: Grove's own manifests
stored, typos refused or pruned, the scale subresource an HPA uses, kubectl explain."""

from __future__ import annotations

import asyncio
import json
import subprocess
from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from gangway_contracts.grove import GROVE_GROUP, GROVE_VERSION, PODCLIQUESET_PLURAL
from gangway_localcluster.build import ensure_binaries
from tests.support import environment
from tests.support.grove_manifests import INVALID_FOR_GROVE_TOO, MANIFESTS, name, podcliqueset
from tests.support.kube import merge_patch
from tests.support.manifests import fixture


async def create(
    api: ApiClient,
    namespace: str,
    manifest: dict[str, Any],
    *,
    field_validation: str = "Strict",
    dry_run: bool = False,
) -> dict[str, Any]:
    options: dict[str, Any] = {"field_validation": field_validation}
    if dry_run:
        options["dry_run"] = "All"
    created: dict[str, Any] = await client.CustomObjectsApi(api).create_namespaced_custom_object(
        GROVE_GROUP, GROVE_VERSION, namespace, PODCLIQUESET_PLURAL, manifest, **options
    )
    return created


def refusal(exc: ApiException) -> str:
    """What the API server said when it refused (its Status message)."""
    message: str = json.loads(exc.body or "{}").get("message", "")
    return message


def pcs_path(namespace: str, name: str) -> str:
    return (
        f"/apis/{GROVE_GROUP}/{GROVE_VERSION}/namespaces/{namespace}/{PODCLIQUESET_PLURAL}/{name}"
    )


async def test_every_grove_manifest_is_accepted_as_written(api: ApiClient, namespace: str) -> None:
    """Grove's samples and e2e manifests pass the generated schema strictly: no field of
    theirs is unknown to it, and none is refused that Grove's CRD takes (the webhook then
    admits them or refuses them by feature)."""
    refused = {}
    for path in MANIFESTS:
        pcs = podcliqueset(path)
        pcs["metadata"]["namespace"] = namespace
        try:
            await create(api, namespace, pcs, dry_run=True)
        except ApiException as exc:
            refused[name(path)] = refusal(exc)
    assert set(refused) == set(INVALID_FOR_GROVE_TOO)
    for manifest, field in INVALID_FOR_GROVE_TOO.items():
        assert f"{field}: Required value" in refused[manifest]


async def test_a_typo_is_refused_strictly_and_pruned_otherwise(
    api: ApiClient, namespace: str
) -> None:
    typo = fixture("podcliquesets/single-clique.yaml")
    typo["metadata"] = {"name": "typo", "namespace": namespace}
    clique = typo["spec"]["template"]["cliques"][0]
    clique["spec"]["replicsa"] = 3
    clique["spec"]["podSpec"]["containers"][0]["imagee"] = "nginx"

    with pytest.raises(ApiException) as caught:
        await create(api, namespace, typo)
    assert caught.value.status == 400  # BadRequest: strict decoding met unknown fields
    message = refusal(caught.value)
    assert 'unknown field "spec.template.cliques[0].spec.replicsa"' in message
    assert 'unknown field "spec.template.cliques[0].spec.podSpec.containers[0].imagee"' in message

    stored = await create(api, namespace, typo, field_validation="Ignore")
    spec = stored["spec"]["template"]["cliques"][0]["spec"]
    assert "replicsa" not in spec
    assert "imagee" not in spec["podSpec"]["containers"][0]


async def test_a_wrong_type_or_value_is_refused(api: ApiClient, namespace: str) -> None:
    bad = fixture("podcliquesets/single-clique.yaml")
    bad["metadata"] = {"name": "bad", "namespace": namespace}
    bad["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeSometimes"
    bad["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]["ports"] = [
        {"containerPort": "eighty"}
    ]
    with pytest.raises(ApiException) as caught:
        await create(api, namespace, bad)
    assert caught.value.status == 422
    assert "spec.template.cliqueStartupType: Unsupported value" in refusal(caught.value)
    assert "containers[0].ports[0].containerPort: Invalid value" in refusal(caught.value)


async def test_the_scale_subresource_scales_a_podcliqueset(api: ApiClient, namespace: str) -> None:
    """What a HorizontalPodAutoscaler does: read the scale, then write spec.replicas."""
    pcs = fixture("podcliquesets/single-clique.yaml")
    pcs["metadata"] = {"name": "scaled", "namespace": namespace}
    await create(api, namespace, pcs)
    selector = "app.kubernetes.io/part-of=scaled"
    await merge_patch(
        api,
        pcs_path(namespace, "scaled") + "/status",
        {"status": {"replicas": pcs["spec"]["replicas"], "hpaPodSelector": selector}},
    )
    custom = client.CustomObjectsApi(api)
    args = (GROVE_GROUP, GROVE_VERSION, namespace, PODCLIQUESET_PLURAL, "scaled")
    scale = await custom.get_namespaced_custom_object_scale(*args)
    assert scale["status"] == {"replicas": pcs["spec"]["replicas"], "selector": selector}

    await merge_patch(api, pcs_path(namespace, "scaled") + "/scale", {"spec": {"replicas": 3}})
    assert (await custom.get_namespaced_custom_object(*args))["spec"]["replicas"] == 3


async def test_kubectl_explain_describes_the_fields(cluster: environment.Cluster) -> None:
    """The CRD's descriptions reach kubectl explain (the API server publishes them)."""
    command = [
        str(ensure_binaries().kubectl),
        "--kubeconfig",
        str(cluster.kubeconfig),
        "explain",
        "podcliquesets.spec.template.cliques.spec.minAvailable",
    ]
    for _ in range(30):  # the API server publishes a new CRD's OpenAPI within seconds
        done = subprocess.run(command, capture_output=True, text=True, check=False)  # noqa: ASYNC221
        if done.returncode == 0:
            break
        await asyncio.sleep(1)
    assert done.returncode == 0, done.stderr
    assert "a gang cannot run without" in " ".join(done.stdout.split())
