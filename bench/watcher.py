"""Watcher benchmark: how fast N objects reach the store, and what the watcher costs.

    uv run python bench/watcher.py --pods 2000

Starts its own control plane and nats-server, creates N Gangway-managed pods, then runs
the watcher as its own process and measures, from outside:
- initial sync: watcher start → every pod in the store (list + publish of N objects);
- update wave: N label patches → every updated record in the store (watch throughput);
- delete wave: N deletes → every tombstone in the store;
- the watcher's CPU seconds and peak RSS (/proc), and its mean publish latency (/metrics).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import sys
import tempfile
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import nats
from measure import proc_usage  # bench/, beside this script
from nats.js import JetStreamContext

from gangway_contracts import labels
from gangway_contracts.resources import PODS
from gangway_contracts.subjects import Subjects
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.nats import NatsServer
from gangway_localcluster.processes import free_port
from gangway_runtime.apiclient import api_client
from gangway_runtime.kube import ApiResource, Kube
from gangway_runtime.objects import last_per_subject

CORE_PODS = ApiResource("", "v1", "pods")
NAMESPACE = "bench"
Counts = tuple[int, int, int]  # pods in the store: live, live with the update wave's label, dead


def pod(i: int) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"bench-{i}",
            "labels": {labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY},
        },
        "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]},
    }


async def in_parallel(count: int, work: Callable[[int], Awaitable[Any]], limit: int = 32) -> None:
    slots = asyncio.Semaphore(limit)

    async def one(i: int) -> None:
        async with slots:
            await work(i)

    await asyncio.gather(*(one(i) for i in range(count)))


async def store_counts(js: JetStreamContext, subjects: Subjects) -> Counts:
    """(live, live with the bench label, tombstones) in the pod subjects of the store."""
    live = labelled = dead = 0
    scan = last_per_subject(js, subjects.objects_stream, subjects.objects_filter(PODS.kind))
    async for msg in scan:
        if b'"deleted":true' in msg.data:
            dead += 1
        else:
            live += 1
            labelled += b'"wave":"1"' in msg.data
    return live, labelled, dead


async def until(js: JetStreamContext, subjects: Subjects, test: Callable[[Counts], bool]) -> float:
    """Seconds until the store's pod counts pass ``test`` (the stream may not exist yet)."""
    started = time.perf_counter()
    while True:
        try:
            if test(await store_counts(js, subjects)):
                return time.perf_counter() - started
        except nats.js.errors.NotFoundError:
            pass  # the watcher has not provisioned the streams yet
        await asyncio.sleep(0.05)


def mean_publish_ms(port: int) -> float:
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    total = count = 0.0
    for line in text.splitlines():
        if line.startswith('gangway_watcher_publish_seconds_sum{kind="pod"}'):
            total = float(line.split()[-1])
        if line.startswith('gangway_watcher_publish_seconds_count{kind="pod"}'):
            count = float(line.split()[-1])
    return 1000 * total / count if count else 0.0


async def bench(pods: int) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="gangway-bench-"))
    with ControlPlane.start(controller_manager=False) as cp, NatsServer.start() as server:
        async with Kube(await api_client(cp.kubeconfig)) as kube:
            await kube.request("POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}})
            started = time.perf_counter()
            await in_parallel(
                pods, lambda i: kube.request("POST", CORE_PODS.path(NAMESPACE), body=pod(i))
            )
            created_s = time.perf_counter() - started

            subjects = Subjects("bench")
            port = free_port()
            env = {
                **os.environ,
                "GANGWAY_NATS_URL": server.url,
                "GANGWAY_SUBJECT_PREFIX": subjects.prefix,
                "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
                "GANGWAY_HTTP_HOST": "127.0.0.1",
                "GANGWAY_HTTP_PORT": str(port),
                "GANGWAY_LOG_LEVEL": "WARNING",
            }
            log = (work / "watcher.log").open("wb")
            nc = await nats.connect(server.url)
            js = nc.jetstream()
            watcher = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "gangway_watcher", env=env, stdout=log, stderr=log
            )
            try:
                sync_s = await until(js, subjects, lambda c: c[0] == pods)

                async def relabel(i: int) -> Any:
                    patch = {"metadata": {"labels": {"wave": "1"}}}
                    return await kube.request(
                        "PATCH",
                        CORE_PODS.path(NAMESPACE, f"bench-{i}"),
                        body=patch,
                        content_type="application/merge-patch+json",
                    )

                started = time.perf_counter()
                await in_parallel(pods, relabel)
                await until(js, subjects, lambda c: c[1] == pods)
                update_s = time.perf_counter() - started

                started = time.perf_counter()
                await in_parallel(
                    pods,
                    lambda i: kube.request(
                        "DELETE",
                        CORE_PODS.path(NAMESPACE, f"bench-{i}"),
                        body={"gracePeriodSeconds": 0},
                    ),
                )
                await until(js, subjects, lambda c: c[2] == pods)
                delete_s = time.perf_counter() - started
                cpu_s, rss_mib = proc_usage(watcher.pid)
                publish_ms = mean_publish_ms(port)
            finally:
                watcher.terminate()
                await watcher.wait()
                await nc.close()
    return {
        "pods": pods,
        "create via API (not the watcher), s": round(created_s, 2),
        "initial sync (start → all in store), s": round(sync_s, 2),
        "update wave → all stored, s": round(update_s, 2),
        "delete wave → all tombstones, s": round(delete_s, 2),
        "watcher CPU, s": round(cpu_s, 2),
        "watcher peak RSS, MiB": rss_mib,
        "mean publish (request → ack), ms": round(publish_ms, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pods", type=int, default=2000)
    args = parser.parse_args()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    for key, value in asyncio.run(bench(args.pods)).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
