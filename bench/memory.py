"""The services' memory idle, and podgang's while a huge PodCliqueSet is refused and while a
large one is built.

    uv run python -m bench.memory                  # 100 000 gangs refused, 5 000 built
    uv run python -m bench.memory --build 2000

Run from the checkout's root (it uses the chaos suite's system: every service its own
process, a fresh nats-server, kube-apiserver with the garbage collector, no scheduler).
Reports every service's peak RSS (VmHWM; VmRSS beside it) idle, then podgang's after a
PodCliqueSet of ``--refuse`` gangs (over the ceiling: refused before planning) has been
seen for 20 s, and once every PodGang of one of ``--build`` gangs of 2 pods exists, plus
10 s.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from functools import partial
from pathlib import Path

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from tests.chaos.scenario import chaos_workload, start_system
from tests.support.kube import admin_client, fresh_namespace, server_side_apply
from tests.support.podgang import podgangs
from tests.support.store import eventually

SETTLE_SECONDS = 10.0


def peak_rss(pid: int) -> str:
    """The process's peak resident memory so far (VmHWM), and what it holds now (VmRSS)."""
    status = Path(f"/proc/{pid}/status").read_text().splitlines()

    def mib(field: str) -> int:
        return int(next(line for line in status if line.startswith(field)).split()[1]) // 1024

    return f"{mib('VmHWM')} MiB (now {mib('VmRSS')} MiB)"


async def bench(refuse: int, build: int) -> None:
    with (
        tempfile.TemporaryDirectory(prefix="gangway-memory-") as work,
        ControlPlane.start(crds=crd_files()) as cp,
    ):
        system = start_system(cp, Path(work))
        try:
            await asyncio.sleep(SETTLE_SECONDS)  # connected, streams and durables in place
            for service, service_pid in sorted(system.services.pids().items()):
                print(f"{service} idle: {peak_rss(service_pid)}")
            pid = system.services.pids()["podgang"]
            async with admin_client(cp.kubeconfig) as api, fresh_namespace(api) as namespace:
                await server_side_apply(api, chaos_workload(namespace, "huge", refuse), namespace)
                await asyncio.sleep(20)
                made = len(await podgangs(api, namespace))
                print(f"{refuse} gangs refused: {peak_rss(pid)}, {made} PodGangs made")
            async with admin_client(cp.kubeconfig) as api, fresh_namespace(api) as namespace:
                started = time.monotonic()
                await server_side_apply(api, chaos_workload(namespace, "large", build), namespace)
                await eventually(
                    partial(podgangs, api, namespace), lambda f: len(f) >= build, within=900
                )
                took = time.monotonic() - started
                await asyncio.sleep(SETTLE_SECONDS)
                print(
                    f"{build} gangs ({2 * build} pods) built: {peak_rss(pid)} "
                    f"(every PodGang after {took:.0f} s)"
                )
        finally:
            system.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--refuse", type=int, default=100_000)
    parser.add_argument("--build", type=int, default=5_000)
    args = parser.parse_args()
    asyncio.run(bench(args.refuse, args.build))


if __name__ == "__main__":
    main()
