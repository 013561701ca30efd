"""deploy/'s overlays, rendered by kubectl kustomize, against the real API server: every
object passes a server-side dry run, every pod template passes the namespace's
``restricted`` Pod Security level, the NATS configuration parses in nats-server, and each
service's NATS user is one the configuration defines."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from gangway_contracts.permissions import password_variable
from gangway_localcluster.certs import write_serving_certificate
from gangway_localcluster.nats import nats_server_binary
from tests.support.deploy import (
    NAMESPACE,
    NOT_SERVED,
    OVERLAYS,
    config_map_data,
    ensure_namespace,
    pod_templates,
    rendered,
    rendered_crds,
)
from tests.support.kube import server_side_apply


@pytest.mark.parametrize("overlay", OVERLAYS)
async def test_every_object_passes_a_server_side_dry_run(api: ApiClient, overlay: str) -> None:
    await ensure_namespace(api)
    sent, skipped = [], []
    for doc in rendered(overlay):
        if doc["apiVersion"] in NOT_SERVED:
            skipped.append(doc["kind"])
            continue
        applied = await server_side_apply(api, doc, namespace=NAMESPACE, dry_run=True)
        assert applied["metadata"]["name"] == doc["metadata"]["name"]
        sent.append(doc["kind"])
    assert {"Deployment", "StatefulSet", "ValidatingWebhookConfiguration"} <= set(sent)
    # cert-manager's: the webhook's certificate, the bus's CA, its Issuer and certificate.
    by_cert_manager = ["Issuer", "Certificate", "Certificate", "Issuer", "Certificate"]
    expected_skips = [] if overlay == "self-signed" else by_cert_manager
    assert sorted(skipped) == sorted(expected_skips)


@pytest.mark.parametrize("overlay", OVERLAYS)
async def test_every_pod_is_admitted_under_restricted_pod_security(
    api: ApiClient, overlay: str
) -> None:
    """Pod Security admission judges pods, not their controllers: each template is sent as
    a pod (dry run) into gangway-system, which enforces ``restricted``."""
    await ensure_namespace(api)
    careless = {  # proves the level is enforced
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "careless"},
        "spec": {"containers": [{"name": "careless", "image": "busybox"}]},
    }
    with pytest.raises(ApiException, match="violates PodSecurity"):
        await server_side_apply(api, careless, namespace=NAMESPACE, dry_run=True)
    templates = pod_templates(rendered(overlay))
    assert len(templates) >= 6
    for owner, template in templates.items():
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": owner.split("/")[1], "labels": template["metadata"]["labels"]},
            "spec": template["spec"],
        }
        try:
            await server_side_apply(api, pod, namespace=NAMESPACE, dry_run=True)
        except ApiException as exc:
            pytest.fail(f"{owner}: {exc.body!s}")


def _services(docs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Deployment name → its container's environment, as name → value or secret key."""
    found = {}
    for doc in docs:
        if doc["kind"] != "Deployment":
            continue
        container = doc["spec"]["template"]["spec"]["containers"][0]
        env = {}
        for var in container.get("env", []):
            ref = (var.get("valueFrom") or {}).get("secretKeyRef")
            env[var["name"]] = ref["key"] if ref else var.get("value")
        found[doc["metadata"]["name"]] = env
    return found


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_each_service_connects_as_a_nats_user_the_configuration_defines(overlay: str) -> None:
    docs = rendered(overlay)
    auth = config_map_data(docs, "gangway-nats-auth")["nats-users.conf"]
    services = _services(docs)
    assert len(services) >= 4
    for name, env in services.items():
        user = env["GANGWAY_NATS_USER"]
        assert f'{{user: "{user}", password: ${password_variable(user)},' in auth, name
        assert env["GANGWAY_NATS_PASSWORD"] == password_variable(user), name
    if overlay == "kai-only":
        assert "gangway-backend-kube" not in services


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_the_nats_configuration_parses(overlay: str, tmp_path: Path) -> None:
    """nats-server reads the rendered configuration as the pods mount it (-t: check, exit)."""
    docs = rendered(overlay)
    # The certificate the pod finds at /etc/nats/tls (from Secret gangway-nats-tls).
    tls = write_serving_certificate(tmp_path / "tls", ("gangway-nats",), "gangway-nats")
    for name in ("gangway-nats", "gangway-nats-auth"):  # projected into one directory
        for file, text in config_map_data(docs, name).items():
            (tmp_path / file).write_text(text.replace("/etc/nats/tls/", f"{tls.cert.parent}/"))
    auth = (tmp_path / "nats-users.conf").read_text()
    users = [line.split('"')[1] for line in auth.splitlines() if "{user: " in line]
    env = {**os.environ, "POD_NAME": "gangway-nats-0"}
    env |= {password_variable(user): f"secret-of-{user}" for user in users}
    done = subprocess.run(
        [nats_server_binary(), "-t", "-c", str(tmp_path / "nats.conf")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_deleting_an_overlay_never_deletes_the_crds(overlay: str) -> None:
    """`kubectl delete -k <overlay>` deleted Gangway's CRDs, and with them every PodCliqueSet
    and PodGang in the cluster. The CRDs are deploy/crds, installed on their own."""
    assert [
        d["metadata"]["name"] for d in rendered(overlay) if d["kind"] == "CustomResourceDefinition"
    ] == []
    assert sorted(d["metadata"]["name"] for d in rendered_crds()) == [
        "podcliques.grove.io",
        "podcliquescalinggroups.grove.io",
        "podcliquesets.grove.io",
        "podgangs.scheduler.grove.io",
    ]
