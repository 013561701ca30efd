"""Credentials as kubernetes-asyncio loads them, and how Gangway reports what it cannot use.
The requests themselves, with each kind of credential, are proven against a real API server
in tests/integration/runtime/test_kube_auth.py."""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_localcluster.certs import CertificateAuthority
from gangway_runtime.apiclient import ApiSession, KubeconfigError, api_client

CA = CertificateAuthority("test-ca")
CLIENT = CA.issue("admin", orgs=("system:masters",))


def kubeconfig(tmp_path: Path, user: dict[str, Any], name: str = "config", **cluster: Any) -> Path:
    path = tmp_path / name
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "here",
        "contexts": [{"name": "here", "context": {"cluster": "c", "user": "u"}}],
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443/", **cluster}}],
        "users": [{"name": "u", "user": user}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


async def loaded(path: Path | None) -> ApiSession:
    session = await api_client(path)
    await session.close()
    return session


async def bearer(session: ApiSession) -> str:
    """The Authorization header the next request would carry."""
    found: str = await session.client.configuration.get_api_key_with_prefix("BearerToken")
    return found


async def test_a_token_an_inline_ca_and_a_server_name(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path,
        {"token": "s3cret"},
        **{"certificate-authority-data": b64(CA.cert_pem), "tls-server-name": "api"},
    )
    session = await loaded(path)
    assert session.server == "https://127.0.0.1:6443"
    assert session.client.configuration.tls_server_name == "api"
    assert await bearer(session) == "Bearer s3cret"


async def test_a_token_file_is_read_again_after_a_while(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("first")
    path = kubeconfig(tmp_path, {"tokenFile": "token"})
    within_a_minute = await loaded(path)
    monkeypatch.setattr("gangway_runtime.apiclient.CREDENTIALS_RELOAD_SECONDS", 0.0)
    due_at_once = await loaded(path)
    (tmp_path / "token").write_text("second")
    assert await bearer(within_a_minute) == "Bearer first"
    assert await bearer(due_at_once) == "Bearer second"


async def test_an_exec_plugin_runs_again_once_its_token_expired(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    plugin = tmp_path / "plugin.py"
    # The first token has expired already, the second lasts.
    plugin.write_text(
        "import json, os, sys\n"
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        f"n = len(open({str(runs)!r}).read().splitlines())\n"
        "expiry = '2000-01-01T00:00:00Z' if n == 1 else '2999-01-01T00:00:00Z'\n"
        "print(json.dumps({'apiVersion': 'client.authentication.k8s.io/v1',\n"
        "  'kind': 'ExecCredential', 'status': {'token': os.environ['GREETING'] + str(n),\n"
        "  'expirationTimestamp': expiry}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": "GREETING", "value": "hello"}],
        }
    }
    session = await loaded(kubeconfig(tmp_path, user))
    assert await bearer(session) == "Bearer hello2"
    assert await bearer(session) == "Bearer hello2"
    assert runs.read_text().splitlines() == ["run", "run"]


async def test_an_exec_plugin_that_fails_is_named(tmp_path: Path) -> None:
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit('no login')"],
        }
    }
    with pytest.raises(KubeconfigError, match="no login"):
        await loaded(kubeconfig(tmp_path, user))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("apiVersion: v1\nkind: Config\n", "Expected key current-context"),
        ("current-context: gone\ncontexts: []\n", "Expected object with name gone"),
        ("clusters: [unclosed\n", "while parsing"),
    ],
)
async def test_a_kubeconfig_it_cannot_use_says_why_in_one_line(
    tmp_path: Path, text: str, why: str
) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=why) as caught:
        await loaded(path)
    assert str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


async def test_a_missing_kubeconfig_is_named(tmp_path: Path) -> None:
    with pytest.raises(KubeconfigError, match="no such file"):
        await loaded(tmp_path / "missing")


async def test_what_kubernetes_asyncio_supports_is_accepted_by_its_own_rules(
    tmp_path: Path,
) -> None:
    """Refused by Gangway's own loader before; now an OIDC auth-provider with a token, basic
    auth and a proxy are used as kubernetes-asyncio uses them, and an OIDC provider without
    a usable token is refused with its reason."""
    basic = await loaded(
        kubeconfig(tmp_path, {"username": "a", "password": "b"}, **{"proxy-url": "http://p:3128"})
    )
    assert await bearer(basic) == "Basic " + b64(b"a:b")
    assert basic.client.configuration.proxy == "http://p:3128"
    header = b64(b'{"alg":"none"}').rstrip("=")
    claims = b64(b'{"exp": 32503680000}').rstrip("=")  # the year 3000
    oidc = {"auth-provider": {"name": "oidc", "config": {"id-token": f"{header}.{claims}.x"}}}
    assert (await bearer(await loaded(kubeconfig(tmp_path, oidc)))).startswith("Bearer ")
    with pytest.raises(KubeconfigError, match="oidc: No valid id-token"):
        await loaded(kubeconfig(tmp_path, {"auth-provider": {"name": "oidc", "config": {}}}))


async def test_kubeconfig_lists_are_merged_as_kubectl_merges_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    used = kubeconfig(tmp_path, {"token": "t"}, name="used")
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{empty}:{used}")
    assert await bearer(await loaded(None)) == "Bearer t"


async def test_in_a_pod_the_service_account_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "token").write_text("pod-token")
    (tmp_path / "ca.crt").write_bytes(CA.cert_pem)
    monkeypatch.setattr("gangway_runtime.apiclient.SERVICE_ACCOUNT", tmp_path)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    session = await loaded(None)
    assert session.server == "https://[fd00::1]:443"
    assert await bearer(session) == "Bearer pod-token"


async def test_the_environments_proxy_is_looked_up_once_not_on_every_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTPS_PROXY (with its credentials) becomes the configuration's proxy; NO_PROXY
    naming the server keeps it direct; a kubeconfig's proxy-url wins; and aiohttp's session
    no longer reads the environment and ~/.netrc on each request."""
    insecure: dict[str, Any] = {"insecure-skip-tls-verify": True}
    path = kubeconfig(tmp_path, {"token": "t"}, **insecure)
    monkeypatch.setenv("HTTPS_PROXY", "http://who:pw@proxy.example:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    session = await loaded(path)
    configuration = session.client.configuration
    assert configuration.proxy == "http://proxy.example:3128"
    assert configuration.proxy_headers == {"Proxy-Authorization": f"Basic {b64(b'who:pw')}"}
    assert session.client.rest_client.proxy == "http://proxy.example:3128"
    assert session.client.rest_client.pool_manager.trust_env is False
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    assert (await loaded(path)).client.configuration.proxy is None
    own = kubeconfig(tmp_path, {"token": "t"}, "own", **{"proxy-url": "http://mine:8080"})
    monkeypatch.delenv("NO_PROXY")
    assert (await loaded(own)).client.configuration.proxy == "http://mine:8080"
