"""What Gangway's pods use on a real node: the chart installed with its small profile
(tests/node's install), each pod's memory and CPU read from its cgroup at rest, then while
``--workloads`` PodCliqueSets of two pods each are admitted, ganged and run, then at rest
again. The small profile's requests are set from these numbers.

    uv run python -m bench.realnode                   # 20 PodCliqueSets (40 pods)
    uv run python -m bench.realnode --workloads 40

Needs root (tests/node's real node). Memory is the pod cgroup's RSS (``total_rss``) and its
peak usage (``max_usage_in_bytes``: page cache included); CPU is millicores over the window.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.kai import SCHEDULER_NAME as KAI
from gangway_localcluster.realnode import PODS_CGROUP, RealNode
from tests.node.workloads import sleepers
from tests.support.realnode import NAMESPACE, all_ready, apply, eventually, install, pods

MEMORY = Path("/sys/fs/cgroup/memory") / PODS_CGROUP
CPU = Path("/sys/fs/cgroup/cpuacct") / PODS_CGROUP
REST_SECONDS = 30.0
BUSY_SECONDS = 60.0


def cgroup(root: Path, uid: str) -> Path:
    return next(root.rglob(f"pod{uid}"))


def gangway_pods(cluster: ControlPlane) -> dict[str, str]:
    """Running Gangway pods, name → uid (the Jobs' are done)."""
    return {
        p["metadata"]["name"]: p["metadata"]["uid"]
        for p in pods(cluster, NAMESPACE)
        if p["status"].get("phase") == "Running"
    }


def cpu_ns(uids: dict[str, str]) -> dict[str, int]:
    return {
        name: int((cgroup(CPU, uid) / "cpuacct.usage").read_text()) for name, uid in uids.items()
    }


def memory_mib(uids: dict[str, str]) -> dict[str, tuple[int, int]]:
    """Pod → (RSS now, peak usage), MiB."""
    found = {}
    for name, uid in uids.items():
        group = cgroup(MEMORY, uid)
        stat = dict(line.split() for line in (group / "memory.stat").read_text().splitlines())
        peak = int((group / "memory.max_usage_in_bytes").read_text())
        found[name] = (int(stat["total_rss"]) >> 20, peak >> 20)
    return found


def window(
    uids: dict[str, str], seconds: float, act: Callable[[], float] = lambda: 0.0
) -> tuple[dict[str, float], float]:
    """Millicores each pod used over ``seconds`` (at least as long as ``act``, which runs
    first), and what ``act`` returned."""
    before, started = cpu_ns(uids), time.monotonic()
    acted = act()
    time.sleep(max(0.0, seconds - (time.monotonic() - started)))
    after, elapsed = cpu_ns(uids), time.monotonic() - started
    return {name: (after[name] - before[name]) / 1e6 / elapsed for name in uids}, acted


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.realnode")
    parser.add_argument("--workloads", type=int, default=20)
    args = parser.parse_args()
    with RealNode.start(schedulers={"kai-scheduler": KAI}) as node:
        cluster = node.control_plane
        install(node, Path(tempfile.mkdtemp(prefix="bench-release-")))
        time.sleep(REST_SECONDS)  # past start-up: caches filled, streams made
        uids = gangway_pods(cluster)
        rest, _ = window(uids, REST_SECONDS)
        rest_memory = memory_mib(uids)

        def burst() -> float:
            """Apply every PodCliqueSet (half on KAI), wait until all run: seconds taken."""
            started = time.monotonic()
            for i in range(args.workloads):
                scheduler = "default-scheduler" if i % 2 else KAI
                apply(cluster, f"bench-{i}", sleepers(f"w{i}", scheduler))
            for i in range(args.workloads):
                eventually(partial(all_ready, cluster, f"bench-{i}"), f"bench-{i} running")
            return time.monotonic() - started

        busy, running_after = window(uids, BUSY_SECONDS, burst)
        busy_memory = memory_mib(uids)
        print(
            f"{args.workloads} PodCliqueSets ({2 * args.workloads} pods) all Running "
            f"{running_after:.1f}s after the first was applied"
        )
        print("| pod | at rest: mCPU / RSS MiB | the 60 s from the burst: mCPU / RSS / peak MiB |")
        print("| --- | --- | --- |")
        for name in sorted(uids):
            print(
                f"| {name.rsplit('-', 2)[0] if name.count('-') > 2 else name} "
                f"| {rest[name]:.1f} / {rest_memory[name][0]} "
                f"| {busy[name]:.1f} / {busy_memory[name][0]} / {busy_memory[name][1]} |"
            )


if __name__ == "__main__":
    main()
