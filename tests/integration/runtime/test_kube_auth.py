"""Every way a user's credentials reach the API server, through kubernetes-asyncio, each
against the real API server: the request is made, and the server says who made it
(a SelfSubjectReview)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import datetime
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
import yaml
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster.controlplane import ADMIN_USER
from gangway_runtime.apiclient import KubeconfigError, api_client
from gangway_runtime.kube import Kube
from tests.support import environment
from tests.support.kube import fresh_namespace

SELF_REVIEW = "/apis/authentication.k8s.io/v1/selfsubjectreviews"
REVIEW = {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}


@pytest.fixture
async def namespace(api: ApiClient) -> AsyncIterator[str]:
    async with fresh_namespace(api) as name:
        yield name


def cluster_of(kubeconfig: Path) -> dict[str, Any]:
    """The admin kubeconfig's cluster: server and CA, which every test's kubeconfig reuses."""
    doc = yaml.safe_load(kubeconfig.read_text())
    current = next(c for c in doc["contexts"] if c["name"] == doc["current-context"])
    name = current["context"]["cluster"]
    found: dict[str, Any] = next(c["cluster"] for c in doc["clusters"] if c["name"] == name)
    return found


def write_kubeconfig(path: Path, cluster: dict[str, Any], user: dict[str, Any]) -> Path:
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "t",
        "contexts": [{"name": "t", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


async def token_for(api: ApiClient, namespace: str, account: str) -> str:
    """A bound token of a ServiceAccount made for it (the TokenRequest API)."""
    core = client.CoreV1Api(api)
    with contextlib.suppress(client.ApiException):
        await core.create_namespaced_service_account(
            namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=account))
        )
    request = client.AuthenticationV1TokenRequest(
        spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
    )
    answer = await core.create_namespaced_service_account_token(account, namespace, request)
    token: str = answer.status.token
    return token


async def who(kube: Kube) -> str:
    body = await kube.request("POST", SELF_REVIEW, body=REVIEW)
    username: str = msgspec.json.decode(body)["status"]["userInfo"]["username"]
    return username


async def who_with(kubeconfig: Path | None) -> str:
    async with Kube(await api_client(kubeconfig)) as kube:
        return await who(kube)


async def test_client_certificate(cluster: environment.Cluster) -> None:
    user = await who_with(cluster.kubeconfig)
    if cluster.control_plane is not None:  # ours: its admin kubeconfig holds a certificate
        assert user == ADMIN_USER


async def test_bearer_token_file_rotated_while_running(
    cluster: environment.Cluster,
    api: ApiClient,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("gangway_runtime.apiclient.CREDENTIALS_RELOAD_SECONDS", 0.0)
    token_file = tmp_path / "token"
    token_file.write_text(await token_for(api, namespace, "first"))
    path = write_kubeconfig(
        tmp_path / "kubeconfig", cluster_of(cluster.kubeconfig), {"tokenFile": "token"}
    )
    async with Kube(await api_client(path)) as kube:
        assert await who(kube) == f"system:serviceaccount:{namespace}:first"
        token_file.write_text(await token_for(api, namespace, "second"))  # rotated
        assert await who(kube) == f"system:serviceaccount:{namespace}:second"


async def test_exec_plugin(
    cluster: environment.Cluster, api: ApiClient, namespace: str, tmp_path: Path
) -> None:
    token = await token_for(api, namespace, "plugged")
    plugin = tmp_path / "credential.py"
    plugin.write_text(
        "import json, os\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        f"  'status': {{'token': {token!r}}}}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "interactiveMode": "Never",
        }
    }
    path = write_kubeconfig(tmp_path / "kubeconfig", cluster_of(cluster.kubeconfig), user)
    assert await who_with(path) == f"system:serviceaccount:{namespace}:plugged"


async def test_in_cluster_service_account_with_its_token_rotated(
    cluster: environment.Cluster,
    api: ApiClient,
    namespace: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The pod's view faked on disk only: the service variables and the mounted token and
    CA; kubernetes-asyncio's in-cluster loader reads the token again when due."""
    found = cluster_of(cluster.kubeconfig)
    host, port = found["server"].removeprefix("https://").rsplit(":", 1)
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(found["certificate-authority-data"]))
    (tmp_path / "token").write_text(await token_for(api, namespace, "pod"))
    monkeypatch.setattr("gangway_runtime.apiclient.SERVICE_ACCOUNT", tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    monkeypatch.setattr(
        "kubernetes_asyncio.config.incluster_config.TOKEN_REFRESH_PERIOD",
        datetime.timedelta(0),
    )
    async with Kube(await api_client(None)) as kube:
        assert await who(kube) == f"system:serviceaccount:{namespace}:pod"
        (tmp_path / "token").write_text(await token_for(api, namespace, "rotated"))
        assert await who(kube) == f"system:serviceaccount:{namespace}:rotated"


class ConnectProxy:
    """An HTTP CONNECT proxy on loopback that counts the tunnels it opened: proof that the
    requests went through it."""

    def __init__(self) -> None:
        self.tunnels: list[str] = []
        self.server: asyncio.Server | None = None

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode()
        method, target, _ = head.split(" ", 2)
        if method != "CONNECT":
            writer.write(b"HTTP/1.1 405 Method Not Allowed\r\n\r\n")
            writer.close()
            return
        host, port = target.rsplit(":", 1)
        upstream_reader, upstream_writer = await asyncio.open_connection(host, int(port))
        self.tunnels.append(target)
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, upstream_writer), pipe(upstream_reader, writer))


async def test_a_proxy_url_is_used(cluster: environment.Cluster, tmp_path: Path) -> None:
    """Refused by Gangway's own loader before: now kubernetes-asyncio's rule, and the
    request goes through the proxy."""
    admin = yaml.safe_load(cluster.kubeconfig.read_text())
    proxy = ConnectProxy()
    async with proxy as url:
        admin["clusters"][0]["cluster"]["proxy-url"] = url
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(admin))
        assert await who_with(path)
    host_port = cluster_of(cluster.kubeconfig)["server"].removeprefix("https://")
    assert proxy.tunnels
    assert set(proxy.tunnels) == {host_port}


async def test_an_oidc_provider_without_a_usable_token_is_refused_by_its_rule(
    cluster: environment.Cluster, tmp_path: Path
) -> None:
    user = {"auth-provider": {"name": "oidc", "config": {"client-id": "gangway"}}}
    path = write_kubeconfig(tmp_path / "kubeconfig", cluster_of(cluster.kubeconfig), user)
    with pytest.raises(KubeconfigError, match="oidc: No valid id-token"):
        await api_client(path)
