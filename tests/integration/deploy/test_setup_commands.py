"""What deploy/'s jobs run (``gangway deploy nats-passwords`` and ``webhook-cert``), against
the real API server under the jobs' own service accounts and RBAC: they converge, run twice
change nothing, and keep what is already there."""

from __future__ import annotations

import asyncio
import base64
import datetime
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_cli.deploy import (
    NATS_PASSWORDS_SECRET,
    NatsCertificate,
    WebhookCertificate,
    ensure_nats_certificate,
    ensure_nats_passwords,
    ensure_webhook_certificate,
)
from gangway_contracts.permissions import password_variable
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import Kube
from tests.support.deploy import NAMESPACE, install_rbac, rendered
from tests.support.environment import Cluster
from tests.support.kube import server_side_apply

USERS = ["watcher", "podgang", "admission", "backend-kai-scheduler"]


@pytest.fixture
def kubeconfig_of(cluster: Cluster) -> Callable[[str], Path]:
    control_plane = cluster.control_plane
    if control_plane is None:
        pytest.skip("needs the local control plane to mint a service account's identity")

    def make(account: str) -> Path:
        user = f"system:serviceaccount:{NAMESPACE}:{account}"
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"]
        return control_plane.user_kubeconfig(user, groups)

    return make


async def _as(kubeconfig: Path) -> AsyncIterator[Kube]:
    api = await api_client(kubeconfig)
    async with api:
        yield Kube(api)


async def _secret(api: ApiClient, name: str) -> dict[str, str] | None:
    core = client.CoreV1Api(api)
    try:
        found = await core.read_namespaced_secret(name, NAMESPACE)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    data: dict[str, str] = found.data or {}
    return data


async def _delete_secret(api: ApiClient, name: str) -> None:
    if await _secret(api, name) is not None:
        await client.CoreV1Api(api).delete_namespaced_secret(name, NAMESPACE)


async def test_nats_passwords_are_made_once_and_kept(
    api: ApiClient, kubeconfig_of: Callable[[str], Path]
) -> None:
    await install_rbac(api)
    await _delete_secret(api, NATS_PASSWORDS_SECRET)
    async for kube in _as(kubeconfig_of("gangway-setup")):
        assert sorted(await ensure_nats_passwords(kube, NAMESPACE, USERS)) == sorted(USERS)
        first = await _secret(api, NATS_PASSWORDS_SECRET)
        assert first is not None
        assert sorted(first) == sorted(password_variable(u) for u in USERS)
        assert len(set(first.values())) == len(USERS)  # each its own

        assert await ensure_nats_passwords(kube, NAMESPACE, USERS) == []
        assert await _secret(api, NATS_PASSWORDS_SECRET) == first

        # A backend added later gets a password; nobody else's changes.
        more = [*USERS, "backend-default-scheduler"]
        assert await ensure_nats_passwords(kube, NAMESPACE, more) == ["backend-default-scheduler"]
        after = await _secret(api, NATS_PASSWORDS_SECRET)
        assert after is not None
        assert {k: after[k] for k in first} == first

        # One an earlier generator made, which nats-server cannot read ("-…"), is replaced.
        unreadable = password_variable(USERS[0])
        dashed = base64.b64encode(b"-9VjEUjZJifpoRCZ1buP29").decode()
        await client.CoreV1Api(api).patch_namespaced_secret(
            NATS_PASSWORDS_SECRET, NAMESPACE, {"data": {unreadable: dashed}}
        )
        assert await ensure_nats_passwords(kube, NAMESPACE, more) == [USERS[0]]
        fixed = await _secret(api, NATS_PASSWORDS_SECRET)
        assert fixed is not None
        assert not base64.b64decode(fixed[unreadable]).startswith(b"-")
        assert {k: v for k, v in fixed.items() if k != unreadable} == {
            k: v for k, v in after.items() if k != unreadable
        }


async def test_the_command_runs_in_its_own_process(
    api: ApiClient, kubeconfig_of: Callable[[str], Path]
) -> None:
    """The job's command line, as the Job's container runs it (here with a kubeconfig)."""
    await install_rbac(api)
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gangway_cli.main",
        "deploy",
        "nats-passwords",
        f"--namespace={NAMESPACE}",
        f"--kubeconfig={kubeconfig_of('gangway-setup')}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=60)
    assert process.returncode == 0, err.decode()
    assert f"Secret {NAMESPACE}/{NATS_PASSWORDS_SECRET}" in out.decode()
    assert "password" not in err.decode().lower()


async def _webhook_configuration(api: ApiClient) -> dict[str, Any]:
    """deploy/'s registration for real, but matching no namespace: a webhook whose service
    does not run here must never judge the other tests' PodCliqueSets."""
    doc = next(d for d in rendered("self-signed") if d["kind"] == "ValidatingWebhookConfiguration")
    for webhook in doc["webhooks"]:
        webhook["namespaceSelector"] = {"matchLabels": {"gangway.dev/test": "never"}}
    return await server_side_apply(api, doc, namespace="")


def _ca_bundles(configuration: dict[str, Any]) -> set[bytes]:
    return {base64.b64decode(w["clientConfig"]["caBundle"]) for w in configuration["webhooks"]}


@pytest.fixture
async def target(api: ApiClient) -> AsyncIterator[WebhookCertificate]:
    """RBAC installed, the webhook configuration registered, no certificate yet."""
    await install_rbac(api)
    await _webhook_configuration(api)
    target = WebhookCertificate(namespace=NAMESPACE)
    await _delete_secret(api, target.name)
    yield target
    admission = client.AdmissionregistrationV1Api(api)
    await admission.delete_validating_webhook_configuration(target.name)


async def test_webhook_certificate_is_issued_trusted_and_renewed(
    api: ApiClient, kubeconfig_of: Callable[[str], Path], target: WebhookCertificate
) -> None:
    admission = client.AdmissionregistrationV1Api(api)
    async for kube in _as(kubeconfig_of("gangway-webhook-cert")):
        assert await ensure_webhook_certificate(kube, target) == "issued"
        data = await _secret(api, target.name)
        assert data is not None
        cert = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
        ca_pem = base64.b64decode(data["ca.crt"])
        cert.verify_directly_issued_by(x509.load_pem_x509_certificate(ca_pem))
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(target.hosts) <= set(names.get_values_for_type(x509.DNSName))
        stored = await admission.read_validating_webhook_configuration(target.name)
        assert _ca_bundles(api.sanitize_for_serialization(stored)) == {ca_pem}

        assert await ensure_webhook_certificate(kube, target) == "kept"
        assert await _secret(api, target.name) == data

        # Within 30 days of its end: a new one, and the webhook trusts the new CA.
        soon = cert.not_valid_after_utc - datetime.timedelta(days=29)
        assert await ensure_webhook_certificate(kube, target, now=soon) == "issued"
        renewed = await _secret(api, target.name)
        assert renewed is not None
        assert renewed["tls.crt"] != data["tls.crt"]
        stored = await admission.read_validating_webhook_configuration(target.name)
        bundles = _ca_bundles(api.sanitize_for_serialization(stored))
        assert bundles == {base64.b64decode(renewed["ca.crt"])}


async def test_a_damaged_certificate_is_replaced(
    api: ApiClient, kubeconfig_of: Callable[[str], Path], target: WebhookCertificate
) -> None:
    junk = base64.b64encode(b"not a certificate").decode()
    keys = ("tls.crt", "tls.key", "ca.crt")
    body = client.V1Secret(
        metadata=client.V1ObjectMeta(name=target.name), data=dict.fromkeys(keys, junk)
    )
    await client.CoreV1Api(api).create_namespaced_secret(NAMESPACE, body)
    async for kube in _as(kubeconfig_of("gangway-webhook-cert")):
        assert await ensure_webhook_certificate(kube, target) == "issued"
    data = await _secret(api, target.name)
    assert data is not None
    x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))


async def test_the_bus_certificate_is_renewed_under_the_ca_the_services_trust(
    api: ApiClient, kubeconfig_of: Callable[[str], Path]
) -> None:
    """As the self-signed Job's service account: a CA and NATS's certificate; kept while
    good; renewed under the same CA (the services keep trusting it); a new CA only near
    the old one's end."""
    await install_rbac(api)
    target = NatsCertificate(namespace=NAMESPACE)
    for name in (target.secret, target.ca_secret):
        await _delete_secret(api, name)
    async for kube in _as(kubeconfig_of("gangway-webhook-cert")):
        assert await ensure_nats_certificate(kube, target) == "issued"
        data = await _secret(api, target.secret)
        assert data is not None
        cert = x509.load_pem_x509_certificate(base64.b64decode(data["tls.crt"]))
        ca = x509.load_pem_x509_certificate(base64.b64decode(data["ca.crt"]))
        cert.verify_directly_issued_by(ca)
        names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert set(target.hosts) <= set(names.get_values_for_type(x509.DNSName))
        assert "gangway-nats" in target.hosts

        assert await ensure_nats_certificate(kube, target) == "kept"
        assert await _secret(api, target.secret) == data

        soon = cert.not_valid_after_utc - datetime.timedelta(days=29)
        assert await ensure_nats_certificate(kube, target, now=soon) == "issued"
        renewed = await _secret(api, target.secret)
        assert renewed is not None
        assert renewed["tls.crt"] != data["tls.crt"]
        assert renewed["ca.crt"] == data["ca.crt"]

        near_ca_end = ca.not_valid_after_utc - datetime.timedelta(days=300)
        outcome = await ensure_nats_certificate(kube, target, now=near_ca_end)
        assert outcome == "issued with a new CA"
        replaced = await _secret(api, target.secret)
        assert replaced is not None
        assert replaced["ca.crt"] != data["ca.crt"]
