"""deploy/'s overlays, rendered by the control plane's own kubectl (``kubectl kustomize``)."""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Final

import yaml
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster.build import ensure_binaries
from tests.support.kube import server_side_apply
from tests.support.paths import REPO

OVERLAYS_DIR: Final = REPO / "deploy" / "overlays"
COMPONENTS_DIR: Final = REPO / "deploy" / "components"
OVERLAYS: Final = sorted(p.parent.name for p in OVERLAYS_DIR.glob("*/kustomization.yaml"))
NAMESPACE: Final = "gangway-system"


@functools.cache
def _rendered(overlay: str, components: tuple[str, ...]) -> str:
    kubectl = ensure_binaries().kubectl
    with tempfile.TemporaryDirectory() as scratch:
        # An overlay of the overlay, adding the components an operator would add.
        (Path(scratch) / "kustomization.yaml").write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kustomize.config.k8s.io/v1beta1",
                    "kind": "Kustomization",
                    # Relative: kustomize takes no absolute path.
                    "resources": [os.path.relpath(OVERLAYS_DIR / overlay, scratch)],
                    "components": [
                        os.path.relpath(COMPONENTS_DIR / c, scratch) for c in components
                    ],
                }
            )
        )
        done = subprocess.run(
            [kubectl, "kustomize", scratch], check=True, capture_output=True, text=True
        )
    return done.stdout


@functools.cache
def _rendered_crds() -> str:
    kubectl = ensure_binaries().kubectl
    crds = REPO / "deploy" / "crds"
    return subprocess.run(
        [kubectl, "kustomize", crds], check=True, capture_output=True, text=True
    ).stdout


def rendered_crds() -> list[dict[str, Any]]:
    """deploy/crds: the CRDs, installed on their own (no overlay holds them)."""
    return [doc for doc in yaml.safe_load_all(_rendered_crds()) if doc]


def rendered(overlay: str, components: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """The overlay's objects, with ``components`` of deploy/components added; a fresh copy
    each call (tests may change them)."""
    return [doc for doc in yaml.safe_load_all(_rendered(overlay, components)) if doc]


def config_map_data(docs: list[dict[str, Any]], name: str) -> dict[str, str]:
    """A generated ConfigMap's data, found by its name without the hash suffix."""
    found = [
        d
        for d in docs
        if d["kind"] == "ConfigMap" and d["metadata"]["name"].rsplit("-", 1)[0] == name
    ]
    assert len(found) == 1, f"ConfigMap {name}-<hash>: {len(found)} found"
    data: dict[str, str] = found[0]["data"]
    return data


def pod_templates(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """``Kind/name`` → pod template, of every workload."""
    templates = {}
    for doc in docs:
        spec = doc.get("spec") or {}
        if doc["kind"] == "CronJob":
            spec = spec["jobTemplate"]["spec"]
        if doc["kind"] not in {"Deployment", "StatefulSet", "Job", "CronJob"}:
            continue
        template = spec["template"]
        # A StatefulSet's pods get a volume per claim template; stand in with emptyDirs.
        claims = [c["metadata"]["name"] for c in spec.get("volumeClaimTemplates", [])]
        volumes = template["spec"].setdefault("volumes", [])
        volumes += [{"name": claim, "emptyDir": {}} for claim in claims]
        templates[f"{doc['kind']}/{doc['metadata']['name']}"] = template
    return templates


# cert-manager is not installed in the test cluster: its objects are rendered, not sent.
NOT_SERVED = frozenset({"cert-manager.io/v1"})


async def ensure_namespace(api: ApiClient) -> None:
    """gangway-system for real: namespaced dry runs need their namespace to exist."""
    doc = next(d for d in rendered("default") if d["kind"] == "Namespace")
    await server_side_apply(api, doc, namespace="")


RBAC_KINDS: Final = {"ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"}


def every_overlays_rbac() -> list[dict[str, Any]]:
    """The RBAC objects of all overlays together, each once: every service account there is
    (self-signed's webhook-cert job, each backend of whichever overlay deploys it)."""
    found = {
        (doc["kind"], doc["metadata"]["name"]): doc
        for overlay in OVERLAYS
        for doc in rendered(overlay)
        if doc["kind"] in RBAC_KINDS
    }
    return list(found.values())


async def install_rbac(api: ApiClient) -> None:
    """Every overlay's RBAC, for real."""
    namespace = next(d for d in rendered("default") if d["kind"] == "Namespace")
    await server_side_apply(api, namespace, namespace="")
    for doc in every_overlays_rbac():
        await server_side_apply(api, doc, namespace=NAMESPACE)
