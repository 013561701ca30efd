"""Credentials from a kubeconfig as kubectl reads them, without kubernetes_asyncio."""

from __future__ import annotations

import base64
import ssl
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gangway_localcluster.certs import CertificateAuthority
from gangway_runtime.kubeconfig import KubeconfigError, from_kubeconfig, kubeconfig_path

CA = CertificateAuthority("test-ca")
CLIENT = CA.issue("admin", orgs=("system:masters",))


def kubeconfig(tmp_path: Path, user: dict[str, Any], **cluster: Any) -> Path:
    path = tmp_path / "config"
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


async def test_a_token_and_an_inline_ca(tmp_path: Path) -> None:
    path = kubeconfig(
        tmp_path,
        {"token": "s3cret"},
        **{"certificate-authority-data": b64(CA.cert_pem), "tls-server-name": "api"},
    )
    found = from_kubeconfig(path)
    assert found.server == "https://127.0.0.1:6443"
    assert isinstance(found.tls, ssl.SSLContext)
    assert found.server_name == "api"
    assert found.token is not None
    assert await found.token.get() == "s3cret"


async def test_client_certificates_inline_or_as_files_relative_to_the_kubeconfig(
    tmp_path: Path,
) -> None:
    inline = {
        "client-certificate-data": b64(CLIENT.cert_pem),
        "client-key-data": b64(CLIENT.key_pem),
    }
    assert (
        from_kubeconfig(kubeconfig(tmp_path, inline, **{"insecure-skip-tls-verify": True})).tls
        is False
    )
    found = from_kubeconfig(kubeconfig(tmp_path, inline))
    assert isinstance(found.tls, ssl.SSLContext)
    assert found.token is None

    (tmp_path / "pki").mkdir()
    CLIENT.write(tmp_path / "pki", "admin")
    (tmp_path / "pki" / "ca.crt").write_bytes(CA.cert_pem)
    files = {"client-certificate": "pki/admin.crt", "client-key": "pki/admin.key"}
    found = from_kubeconfig(kubeconfig(tmp_path, files, **{"certificate-authority": "pki/ca.crt"}))
    assert isinstance(found.tls, ssl.SSLContext)


async def test_a_token_file_is_read_when_asked(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("first\n")
    found = from_kubeconfig(kubeconfig(tmp_path, {"tokenFile": "token"}))
    assert found.token is not None
    assert await found.token.get() == "first"


async def test_an_exec_plugin_is_run_once_until_its_token_expires(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os, sys\n"
        f"open({str(runs)!r}, 'a').write('run\\n')\n"
        "info = json.loads(os.environ['KUBERNETES_EXEC_INFO'])\n"
        "print(json.dumps({'apiVersion': info['apiVersion'], 'kind': 'ExecCredential',\n"
        "  'status': {'token': os.environ['GREETING'] + '-token',\n"
        "             'expirationTimestamp': '2999-01-01T00:00:00Z'}}))\n"
    )
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": sys.executable,
            "args": [str(plugin)],
            "env": [{"name": "GREETING", "value": "hello"}],
        }
    }
    found = from_kubeconfig(kubeconfig(tmp_path, user))
    assert found.token is not None
    assert await found.token.get() == "hello-token"
    assert await found.token.get() == "hello-token"
    assert runs.read_text().splitlines() == ["run"]


async def test_an_exec_plugin_that_fails_says_why(tmp_path: Path) -> None:
    user = {"exec": {"command": sys.executable, "args": ["-c", "import sys; sys.exit('no login')"]}}
    found = from_kubeconfig(kubeconfig(tmp_path, user))
    assert found.token is not None
    with pytest.raises(KubeconfigError, match="exit 1: no login"):
        await found.token.get()


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "no current-context"),
        ("apiVersion: v1\nkind: Config\n", "no current-context"),
        ("current-context: gone\ncontexts: []\n", "no context named 'gone'"),
        ("clusters: [unclosed\n", "while parsing"),
    ],
)
def test_a_kubeconfig_it_cannot_use_says_why(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "config"
    path.write_text(text)
    with pytest.raises(KubeconfigError, match=why) as caught:
        from_kubeconfig(path)
    assert str(path) in str(caught.value)


@pytest.mark.parametrize(
    ("user", "why"),
    [
        ({"auth-provider": {"name": "oidc"}}, "auth-provider is not supported"),
        ({"username": "a", "password": "b"}, "username is not supported"),
    ],
)
def test_what_it_does_not_support_is_named(tmp_path: Path, user: dict[str, Any], why: str) -> None:
    with pytest.raises(KubeconfigError, match=why):
        from_kubeconfig(kubeconfig(tmp_path, user))


def test_the_first_kubeconfig_of_the_list_with_a_current_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.write_text("apiVersion: v1\nkind: Config\n")
    used = kubeconfig(tmp_path, {"token": "t"})
    monkeypatch.setenv("KUBECONFIG", f"{tmp_path / 'missing'}:{empty}:{used}")
    assert kubeconfig_path(None) == used
    assert kubeconfig_path(empty) == empty
