"""The session under :class:`gangway_runtime.kube.Kube`: kubernetes-asyncio's configuration
loading (in-cluster, or a kubeconfig with every auth method it supports) and its ``ApiClient``
(aiohttp underneath), requests sent with ``call_api``.

Raw rather than through the generated API classes and models: Grove's and the schedulers'
resources have no model, and decoding every pod of a large workload into models would cost
what msgspec's views do not. The watcher's list/watch streams through the same ``ApiClient``
(not ``kubernetes_asyncio.watch.Watch``: it decodes every event twice with ``json``, retries a
410 from the same stale version where the watcher must relist, and closes the whole client
when it ends); see :meth:`gangway_runtime.kube.Kube.lines`.
"""

from __future__ import annotations

import asyncio
import asyncio.sslproto
import contextlib
import copy
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final

import aiohttp
import msgspec
import yaml
from aiohttp.helpers import get_env_proxy_for_url
from kubernetes_asyncio.client import ApiClient, Configuration
from kubernetes_asyncio.config import ConfigException, load_incluster_config, load_kube_config
from kubernetes_asyncio.config.kube_config import KubeConfigLoader
from yarl import URL

from gangway_runtime.kube import KubeError

__all__ = ["Answer", "ApiSession", "ConnectionLost", "KubeconfigError", "api_client"]

CONNECTIONS: Final = 100  # per session by default, as kubernetes_asyncio's pool
SERVICE_ACCOUNT: Final = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# A kubeconfig's credentials are loaded again this often (see _renewal); in a pod,
# kubernetes-asyncio's in-cluster loader re-reads the service account token by itself.
CREDENTIALS_RELOAD_SECONDS: Final = 60.0

# asyncio gives every TLS connection a read buffer of this size, allocated whole when the
# connection opens: 256 KiB by default, 8 MiB of a service's memory at 32 connections. A TLS
# record holds at most 16 KiB, so a read never returns more than that at once; the API
# server's answers to writes are a few KiB, a larger one is read a record a call.
TLS_READ_BUFFER: Final = 16 << 10
asyncio.sslproto.SSLProtocol.max_size = TLS_READ_BUFFER


class KubeconfigError(OSError):
    """Credentials that cannot be used: an OSError, as a missing kubeconfig is, so that whoever
    reports unreachable clusters in one line reports this one too."""


class ConnectionLost(ConnectionError):
    """No usable answer: the connection failed or closed mid-answer. A ConnectionError, so
    whatever retries on a lost connection retries on it (aiohttp's own errors are not all
    OSErrors)."""


@contextlib.contextmanager
def _retried_as_lost(what: str) -> Iterator[None]:
    """aiohttp's errors as those a caller retries: a refused or unreachable server (an OSError)
    and a timeout as they are, anything else a ConnectionLost saying ``what``."""
    try:
        yield
    except aiohttp.ClientError as exc:
        if isinstance(exc, OSError | TimeoutError):
            raise
        raise ConnectionLost(f"{what}: {exc}") from exc


class Answer:
    """An answer whose headers have come: its body read whole or line by line, once; closed
    after (an answer read to its end gives its connection back to the pool)."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.status = response.status
        self._response = response

    async def read(self) -> bytes:
        with _retried_as_lost("the API server's answer was cut short"):
            return await self._response.read()

    async def lines(self) -> AsyncIterator[bytes]:
        """The body one newline-terminated line at a time, as it arrives; a line longer than
        aiohttp's read buffer (``ApiClient``'s: 2 MiB, above etcd's largest object) ends it
        with a KubeError."""
        with _retried_as_lost("the API server's stream was cut short"):
            try:
                async for line in self._response.content:
                    yield line
            except ValueError as exc:  # aiohttp: "Chunk too big"
                raise KubeError(0, "EventTooLarge", str(exc)) from exc

    def close(self) -> None:
        self._response.close()


class ApiSession:
    """One API server through kubernetes-asyncio's ``ApiClient``: its configuration (address,
    TLS, credentials and how they are renewed) and its pool of connections."""

    def __init__(self, client: ApiClient, *, owned: bool = True) -> None:
        self.client = client
        self._owned = owned  # closed with the session; else its owner closes it

    def sibling(self, connections: int) -> ApiSession:
        """Another pool of ``connections`` to the same API server, with the same
        credentials (renewed the same way): for requests that must not queue behind this
        session's (a webhook's question behind a large workload's writes)."""
        configuration = copy.copy(self.client.configuration)
        configuration.connection_pool_maxsize = connections
        return ApiSession(_client(configuration))

    @property
    def server(self) -> str:
        host: str | None = self.client.configuration.host
        return host or ""

    async def send(
        self,
        method: str,
        path: str,
        *,
        query: Sequence[tuple[str, str]],
        headers: dict[str, str],
        body: Any,
        read_timeout: float | None,
    ) -> Answer:
        """One authenticated request; its answer's headers have come."""
        try:
            with _retried_as_lost("the API server did not answer"):
                response = await self.client.call_api(
                    path,
                    method,
                    query_params=list(query),
                    header_params=dict(headers),
                    # msgspec Structs among the values: kubernetes-asyncio serialises builtins.
                    body=None if body is None else msgspec.to_builtins(body),
                    auth_settings=["BearerToken"],
                    _preload_content=False,
                    _request_timeout=aiohttp.ClientTimeout(sock_read=read_timeout),
                )
        except ConfigException as exc:  # renewing the credentials failed: retried later
            raise KubeconfigError(f"credentials could not be renewed: {_why(exc)}") from exc
        return Answer(response)

    async def close(self) -> None:
        if self._owned:
            await self.client.close()

    async def __aenter__(self) -> ApiSession:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()


async def api_client(kubeconfig: Path | None = None, connections: int = CONNECTIONS) -> ApiSession:
    """In-cluster credentials inside a pod, else the kubeconfig (given, else every file of
    ``$KUBECONFIG`` merged as kubectl merges them, else ``~/.kube/config``); at most
    ``connections`` open at once. KubeconfigError when they cannot be used."""
    configuration = Configuration()
    configuration.connection_pool_maxsize = connections
    if kubeconfig is None and "KUBERNETES_SERVICE_HOST" in os.environ:
        source = f"in-cluster credentials ({SERVICE_ACCOUNT})"
        loading = _in_cluster(configuration)
    else:
        paths = str(kubeconfig or os.environ.get("KUBECONFIG") or Path.home() / ".kube/config")
        source = f"kubeconfig {paths}"
        loading = _from_kubeconfig(configuration, paths)
    try:
        await loading
    except (ConfigException, OSError, yaml.YAMLError, LookupError, TypeError, ValueError) as exc:
        raise KubeconfigError(f"{source}: cannot be used ({_why(exc)})") from None
    except AssertionError:  # kubernetes-asyncio's word for "no such context or cluster"
        raise KubeconfigError(f"{source}: cannot be used (no current context)") from None
    _proxy_from_environment(configuration)
    return ApiSession(_client(configuration))


def _client(configuration: Configuration) -> ApiClient:
    client = ApiClient(configuration)
    client.user_agent = "gangway"
    # aiohttp's session under kubernetes-asyncio trusts the environment: on every request
    # it would look up a proxy for the URL and ~/.netrc in a worker thread (a tenth of
    # podgang's CPU in ScaleTest_1000, bench/RESULTS.md). The proxy is looked up once,
    # into the configuration; the API server authenticates by token or certificate, never
    # by netrc.
    client.rest_client.pool_manager._trust_env = False
    return client


def _proxy_from_environment(configuration: Configuration) -> None:
    """The proxy ``HTTPS_PROXY`` / ``NO_PROXY`` name for the API server, as the
    configuration's own (a kubeconfig's ``proxy-url`` wins), with its credentials."""
    if configuration.proxy or not configuration.host:
        return
    try:
        proxy, auth = get_env_proxy_for_url(URL(configuration.host))
    except LookupError:
        return  # none, or the server is one NO_PROXY names
    configuration.proxy = str(proxy)
    if auth is not None:
        configuration.proxy_headers = {"Proxy-Authorization": auth.encode()}


async def _in_cluster(configuration: Configuration) -> None:
    load_incluster_config(  # type: ignore[no-untyped-call]
        client_configuration=configuration,
        token_filename=str(SERVICE_ACCOUNT / "token"),
        cert_filename=str(SERVICE_ACCOUNT / "ca.crt"),
    )


def _any_file(paths: str) -> None:
    """kubernetes-asyncio reads a missing or empty kubeconfig as a broken one: say which."""
    found = [p for p in paths.split(os.pathsep) if p and os.path.isfile(p)]
    if not found:
        raise FileNotFoundError(f"no such file: {paths}")
    if not any(os.path.getsize(p) for p in found):
        raise ConfigException("empty")


async def _from_kubeconfig(configuration: Configuration, paths: str) -> None:
    _any_file(paths)
    loader = await load_kube_config(
        config_file=paths, client_configuration=configuration, persist_config=False
    )
    configuration.refresh_api_key_hook = _renewal(loader)


def _renewal(loader: KubeConfigLoader) -> Callable[[Configuration], Awaitable[None]]:
    """Before a request, the kubeconfig's credentials loaded again by kubernetes-asyncio
    once a minute, or at once when an exec plugin's token has expired: a rotated
    ``tokenFile`` is read again (kubectl's client does the same; kubernetes-asyncio reads it
    once), an exec plugin runs again, an OIDC token is refreshed."""
    due = time.monotonic() + CREDENTIALS_RELOAD_SECONDS
    lock = asyncio.Lock()

    def expired() -> bool:
        expiry = getattr(loader, "exec_plugin_expiry", None)
        return time.monotonic() >= due or (expiry is not None and expiry <= datetime.now(UTC))

    async def renew(configuration: Configuration) -> None:
        nonlocal due
        if not expired():
            return
        async with lock:
            if expired():
                await loader.load_and_set(configuration)
                due = time.monotonic() + CREDENTIALS_RELOAD_SECONDS

    return renew


def _why(exc: BaseException) -> str:
    """One line (a YAML error spans several), at most 200 characters."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 200 else text[:199] + "…"
