"""Chaos benchmark: how long each fault of the chaos suite (tests/chaos) takes to heal.

    uv run python -m bench.chaos                  # 100 gangs x 2 pods, 3 runs per fault
    uv run python -m bench.chaos --gangs 30 --runs 1

Run from the checkout's root (it imports the suite's scenario). Its own control plane
(kube-scheduler, kwok nodes, the garbage collector) for all runs; per run a fresh nats-server
on disk and fresh service processes (watcher, podgang, backend-default-scheduler with the
Workload API), a workload of ``--gangs`` gangs, and the fault injected once 40 % of its
PodGangs exist. Reported per fault, median and max over the runs: seconds from the faulted
process being back (restarted and ready, the server up again) to Gangway's part done (every
gang made once, synced, initialized, its pods ungated) and to every pod bound by
kube-scheduler too, and from submit to bound. "none" is the baseline (no fault); "two
replicas" runs two of podgang and of the backend with no fault, to compare with it. "3-node
NATS": a cluster with every stream on all three nodes; a node killed (the leader of the
OBJECTS stream or of a consumer) is back 2 s later. "memory storage": streams in memory,
each service under its own NATS user and the bus keeper running, nats-server restarted (it
comes back empty; the keeper makes the streams again; the journal before it is gone, so not
checked).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import tempfile
from functools import partial
from pathlib import Path
from typing import Final

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nodes import NodePool
from tests.chaos.scenario import (
    FAULTS,
    NODE_FAULTS,
    Fault,
    System,
    kill_the_first_replicas,
    restart_nats,
    second_replicas,
    start_system,
    workload_through,
)
from tests.support.kube import admin_client, fresh_namespace


def _nothing(system: System) -> None:
    """No fault: the baseline."""


SINGLE: Final[dict[str, bool]] = {}
CLUSTER: Final = {"cluster": True}  # a 3-node NATS cluster
MEMORY: Final = {"memory": True}  # streams in memory, users, the bus keeper
# (how the system runs, what runs before the workload is submitted, the fault).
SCENARIOS: Final[dict[str, tuple[dict[str, bool], Fault, Fault]]] = {
    "none": (SINGLE, _nothing, _nothing),
    "two replicas": (SINGLE, second_replicas, _nothing),
    **{name: (SINGLE, _nothing, fault) for name, fault in FAULTS.items()},
    "two replicas, one of each killed": (SINGLE, second_replicas, kill_the_first_replicas),
    "none, 3-node NATS": (CLUSTER, _nothing, _nothing),
    **{f"{name}, 3-node NATS": (CLUSTER, _nothing, fault) for name, fault in NODE_FAULTS.items()},
    "nats-server restarted, memory storage": (MEMORY, _nothing, restart_nats),
}


async def one_run(cp: ControlPlane, scenario: str, gangs: int) -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(prefix="gangway-chaos-") as work:
        how, setup, fault = SCENARIOS[scenario]
        # In a thread: starting a bus with users runs a loop of its own (LocalBus.start).
        system = await asyncio.to_thread(partial(start_system, cp, Path(work), **how))
        try:
            setup(system)
            async with admin_client(cp.kubeconfig) as api, fresh_namespace(api) as namespace:
                outcome = await workload_through(system, api, namespace, fault, gangs)
            gaps = [] if how is MEMORY else outcome.journal_gaps  # a memory journal is lost
            if not outcome.converged.converged(gangs) or gaps:
                raise SystemExit(f"{scenario}: did not converge: {gaps[:5]}")
            return outcome.lifted_after, outcome.recovered_after, outcome.makespan
        finally:
            system.stop()


async def bench(gangs: int, runs: int, only: list[str]) -> None:
    with ControlPlane.start(crds=crd_files(), scheduling=True) as cp:
        cp.add_nodes(NodePool(count=8, prefix="chaos"), ready_within=120)
        print(
            "| fault | back → gates lifted, median (max) | back → pods bound, median (max) "
            "| submit → bound, median |"
        )
        print("|---|---|---|---|")
        for scenario in only or SCENARIOS:
            measured = [await one_run(cp, scenario, gangs) for _ in range(runs)]
            lifted, bound, total = ([m[i] for m in measured] for i in range(3))
            print(
                f"| {scenario} | {statistics.median(lifted):.1f} s ({max(lifted):.1f} s) "
                f"| {statistics.median(bound):.1f} s ({max(bound):.1f} s) "
                f"| {statistics.median(total):.1f} s |",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gangs", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("scenarios", nargs="*", help=f"some of: {', '.join(SCENARIOS)}")
    args = parser.parse_args()
    if unknown := set(args.scenarios) - set(SCENARIOS):
        parser.error(f"no such scenario: {', '.join(sorted(unknown))}")
    print(f"# {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    print(f"# {args.gangs} gangs x 2 pods, {args.runs} runs per fault")
    asyncio.run(bench(args.gangs, args.runs, args.scenarios))


if __name__ == "__main__":
    main()
