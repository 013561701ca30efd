"""Applying arbitrary manifests through kubernetes_asyncio, the way kubectl does."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_runtime.apiclient import ApiSession
from gangway_runtime.kube import Kube

FIELD_MANAGER = "gangway-tests"
_OBJECT = {200: "object", 201: "object"}


async def _call(api: ApiClient, path: str, method: str, **kwargs: Any) -> Any:
    return await api.call_api(
        path,
        method,
        response_types_map=_OBJECT,
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
        **kwargs,
    )


async def resource_path(api: ApiClient, doc: dict[str, Any], namespace: str) -> str:
    """REST path of the object a manifest names, from API discovery."""
    api_version: str = doc["apiVersion"]
    base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    discovery = await _call(api, base, "GET", header_params={"Accept": "application/json"})
    resource = next(
        r for r in discovery["resources"] if r["kind"] == doc["kind"] and "/" not in r["name"]
    )
    ns = doc.get("metadata", {}).get("namespace") or namespace
    scope = f"/namespaces/{ns}" if resource["namespaced"] else ""
    return f"{base}{scope}/{resource['name']}/{doc['metadata']['name']}"


async def server_side_apply(
    api: ApiClient, doc: dict[str, Any], namespace: str, dry_run: bool = False
) -> dict[str, Any]:
    path = await resource_path(api, doc, namespace)
    query = [("fieldManager", FIELD_MANAGER), ("force", "true")]
    if dry_run:
        query.append(("dryRun", "All"))
    headers = {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"}
    result: dict[str, Any] = await _call(
        api, path, "PATCH", query_params=query, body=doc, header_params=headers
    )
    return result


async def printed_columns(api: ApiClient, doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object's row as `kubectl get` prints it: printer column name → cell (the API
    server computes the cells from the CRD's additionalPrinterColumns)."""
    path = await resource_path(api, doc, namespace)
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = await _call(api, path, "GET", header_params={"Accept": accept})
    (row,) = table["rows"]
    return {
        c["name"]: cell for c, cell in zip(table["columnDefinitions"], row["cells"], strict=True)
    }


async def merge_patch(api: ApiClient, path: str, body: dict[str, Any]) -> dict[str, Any]:
    """JSON merge patch (RFC 7386) of any object by REST path; ``/status`` for the status."""
    headers = {"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
    result: dict[str, Any] = await _call(api, path, "PATCH", body=body, header_params=headers)
    return result


@contextlib.asynccontextmanager
async def admin_client(kubeconfig: Path) -> AsyncIterator[ApiClient]:
    configuration = client.Configuration()
    await config.load_kube_config(config_file=str(kubeconfig), client_configuration=configuration)
    async with ApiClient(configuration) as api_client:
        yield api_client


@contextlib.asynccontextmanager
async def fresh_namespace(api: ApiClient) -> AsyncIterator[str]:
    """A namespace of a random name, deleted after."""
    name = f"t-{uuid.uuid4().hex[:10]}"
    core = client.CoreV1Api(api)
    await core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    await core.delete_namespace(name)


def kube_of(api: ApiClient) -> Kube:
    """Gangway's Kube over the test's ApiClient (the test closes it): the tests keep its
    typed APIs, and the services' code paths run unchanged beside them."""
    return Kube(ApiSession(api, owned=False))


async def delete_object(api: ApiClient, doc: dict[str, Any], namespace: str) -> None:
    """Delete the object a manifest names, by REST path from discovery."""
    path = await resource_path(api, doc, namespace)
    await api.call_api(path, "DELETE", auth_settings=["BearerToken"], _preload_content=False)


async def ensure_priority_class(api: ApiClient, name: str, value: int) -> None:
    """A PriorityClass (cluster-wide, kept): pods naming one the cluster lacks are refused."""
    body = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
    }
    await server_side_apply(api, body, "")
