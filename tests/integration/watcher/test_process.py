"""``python -m gangway_watcher`` as it runs in its pod: settings from the environment,
probes and metrics over HTTP, a clean exit on SIGTERM."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import urllib.error
import urllib.request
from pathlib import Path

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_contracts.subjects import Kind, Subjects
from gangway_localcluster.processes import free_port
from tests.integration.watcher.conftest import podcliqueset
from tests.support.environment import Cluster
from tests.support.kube import server_side_apply
from tests.support.store import eventually, holds, stored


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError as exc:
        return 0, str(exc)


async def test_watcher_process_serves_probes_and_stops_on_sigterm(
    cluster: Cluster,
    nats_url: str,
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    tmp_path: Path,
) -> None:
    port = free_port()
    env = {
        **os.environ,
        "GANGWAY_NATS_URL": nats_url,
        "GANGWAY_SUBJECT_PREFIX": subjects.prefix,
        "GANGWAY_KUBECONFIG": str(cluster.kubeconfig),
        "GANGWAY_HTTP_HOST": "127.0.0.1",
        "GANGWAY_HTTP_PORT": str(port),
    }
    log = tmp_path / "watcher.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "gangway_watcher", env=env, stdout=out, stderr=out
        )
    try:

        async def readyz() -> int:
            return (await asyncio.to_thread(get, f"http://127.0.0.1:{port}/readyz"))[0]

        await eventually(readyz, lambda status: status == 200 or proc.returncode is not None)
        assert proc.returncode is None, log.read_text()
        await server_side_apply(api, podcliqueset(namespace, "observed"), namespace)
        js = nc.jetstream()
        await eventually(
            lambda: stored(js, subjects, Kind.PODCLIQUESET), holds((namespace, "observed"))
        )
        status, metrics = get(f"http://127.0.0.1:{port}/metrics")
        assert status == 200
        assert 'gangway_watcher_published_total{kind="podcliqueset",outcome="stored"}' in metrics
        assert get(f"http://127.0.0.1:{port}/healthz")[0] == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            code = await asyncio.wait_for(proc.wait(), 20)
        except TimeoutError:  # never leave it running
            proc.kill()
            code = await proc.wait()
    assert code == 0, log.read_text()
