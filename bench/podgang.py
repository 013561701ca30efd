"""podgang benchmark: a PodCliqueSet of many gangs, from apply to every gate lifted.

    uv run python bench/podgang.py --replicas 500            # Grove's ScaleTest_1000 shape
    uv run python bench/podgang.py --replicas 500 --gang     # with Workload API objects

Starts its own control plane and nats-server, runs watcher, podgang and backend-default-
scheduler as their own processes (as `gangway up` does), applies the scaletest PodCliqueSet
(N replicas × one clique of 2 pods: N gangs) and measures, from outside:
- apply → every PodGang created; apply → every pod created; apply → every gate lifted;
- API writes the podgang service made, in all and per gang (its /metrics);
- the podgang service's CPU seconds and peak RSS (/proc).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import yaml
from measure import proc_usage  # bench/measure.py, beside this script

from gangway_cli.services import LocalServices, services_for
from gangway_contracts import labels
from gangway_contracts.config import load_operator_config
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nats import NatsServer
from gangway_runtime.kube import Kube, api_client
from gangway_runtime.status import PODCLIQUESETS, PODGANGS, PODS

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "fixtures" / "podcliquesets" / "scaletest-1000.yaml"
NAMESPACE = "bench"
GATE = labels.PODGANG_PENDING_CREATION_GATE


def metric_sum(port: int, name: str, having: str = "") -> float:
    """The samples of a metric (label sets containing ``having``) added up."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    return sum(
        float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(name)
        and line[len(name) : len(name) + 1] in ("{", " ")
        and having in line
    )


async def items(kube: Kube, path: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = msgspec.json.decode(await kube.request("GET", path))["items"]
    return found


async def until(check: Callable[[], Any], started: float) -> float:
    """Seconds since ``started`` once ``check()`` holds (polled: the API server is the truth)."""
    while True:
        if await check():
            return time.perf_counter() - started
        await asyncio.sleep(0.1)


async def bench(replicas: int, gang: bool) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="gangway-bench-"))
    config_file = work / "operator-config.yaml"
    profile = {"name": "default-scheduler", "default": True, "config": {"gangScheduling": gang}}
    config_file.write_text(yaml.safe_dump({"scheduler": {"profiles": [profile]}}))
    config = load_operator_config(config_file.read_text())
    crds = crd_files(ROOT / "deploy" / "crds", None)
    with (
        ControlPlane.start(controller_manager=False, crds=crds) as cp,
        NatsServer.start() as server,
    ):
        settings = {
            "GANGWAY_NATS_URL": server.url,
            "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
            "GANGWAY_CONFIG_FILE": str(config_file),
            "GANGWAY_LOG_LEVEL": "WARNING",
        }
        services = LocalServices.start(work, settings, services_for(config))
        try:
            async with await api_client(cp.kubeconfig) as api:
                kube = Kube(api)
                await kube.request(
                    "POST", "/api/v1/namespaces", body={"metadata": {"name": NAMESPACE}}
                )
                pcs = yaml.safe_load(FIXTURE.read_text())
                pcs["metadata"]["namespace"] = NAMESPACE
                pcs["spec"]["replicas"] = replicas
                pods = replicas * 2

                async def podgangs_made() -> bool:
                    return len(await items(kube, PODGANGS.path(NAMESPACE))) == replicas

                async def pods_made() -> bool:
                    return len(await items(kube, PODS.path(NAMESPACE))) == pods

                async def gates_lifted() -> bool:
                    found = await items(kube, PODS.path(NAMESPACE))
                    return len(found) == pods and not any(
                        g["name"] == GATE
                        for p in found
                        for g in p["spec"].get("schedulingGates") or []
                    )

                started = time.perf_counter()
                await kube.request("POST", PODCLIQUESETS.path(NAMESPACE), body=pcs)
                podgangs_s = await until(podgangs_made, started)
                pods_s = await until(pods_made, started)
                lifted_s = await until(gates_lifted, started)
                await asyncio.sleep(2)  # the last status writes
                port = services.ports["podgang"]
                writes = metric_sum(port, "gangway_podgang_api_writes_total")
                status_writes = metric_sum(
                    port, "gangway_podgang_api_writes_total", 'kind="podcliqueset"'
                )
                per_gang_sum = metric_sum(port, "gangway_podgang_api_writes_per_gang_sum")
                per_gang_count = metric_sum(port, "gangway_podgang_api_writes_per_gang_count")
                reconciles = metric_sum(port, "gangway_podgang_reconciles_total")
                cpu_s, rss_mib = proc_usage(services.pids["podgang"])
        finally:
            services.stop()
    return {
        "gangs (PCS replicas)": replicas,
        "pods": pods,
        "Workload API objects (gangScheduling)": gang,
        "apply → every PodGang created, s": round(podgangs_s, 2),
        "apply → every pod created, s": round(pods_s, 2),
        "apply → every gate lifted, s": round(lifted_s, 2),
        "API writes by podgang, total": int(writes),
        "of which PodCliqueSet status": int(status_writes),
        "API writes per gang (PodGang + its pods), mean": round(
            per_gang_sum / per_gang_count if per_gang_count else 0.0, 2
        ),
        "reconciles": int(reconciles),
        "podgang CPU, s": round(cpu_s, 2),
        "podgang peak RSS, MiB": rss_mib,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--replicas", type=int, default=500)
    parser.add_argument("--gang", action="store_true", help="gangScheduling on (Workload API)")
    args = parser.parse_args()
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    for key, value in asyncio.run(bench(args.replicas, args.gang)).items():
        print(f"{key}: {value}")


if __name__ == "__main__":
    main()
