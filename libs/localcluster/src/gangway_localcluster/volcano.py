"""Volcano's scheduler (vc-scheduler) from its Go module, and the CRDs it reads.

vc-scheduler is not a kube-scheduler build: it runs its own session loop (actions
``enqueue, allocate, backfill`` over tiers of plugins) every second, places a PodGroup
(``scheduling.volcano.sh/v1beta1``) only when ``minMember`` of its pods, and each task's
``minTaskMember``, can run, and keeps queues within their capability. Nothing else of Volcano
is needed to place a gang: its controller manager makes PodGroups for bare pods and writes
queue status, its webhooks default and check PodGroups and queues. The scheduler creates the
``default`` queue itself at start.

Version :data:`VOLCANO_VERSION` is the newest release the Go module proxy serves (v1.10.1 and
every later release answer 403). Its go.mod requires the published ``volcano.sh/apis`` of the
same version and replaces the Kubernetes staging modules at v0.30.2, so ``go install``
refuses it; the wrapper module (``tools/volcano``) copies its requirements and replaces. The
CRDs come from the same module download as the binary.

    python -m gangway_localcluster --write-module   # regenerates tools/volcano
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from gangway_localcluster.build import WrappedModule

VOLCANO_VERSION: Final = "1.10.0"
MODULE: Final = "volcano.sh/volcano"
BINARY: Final = "vc-scheduler"
CRDS: Final = tuple(
    f"config/crd/volcano/bases/{name}.yaml"
    for name in (
        "scheduling.volcano.sh_podgroups",
        "scheduling.volcano.sh_queues",
        # Listed and watched by the scheduler's numa-aware plugin's informer at start.
        "nodeinfo.volcano.sh_numatopologies",
    )
)
VOLCANO: Final = WrappedModule(
    "volcano", MODULE, VOLCANO_VERSION, {f"{MODULE}/cmd/scheduler": BINARY}, CRDS
)
# The name Volcano's own install gives its scheduler (and the one Grove's backend writes).
SCHEDULER_NAME: Final = "volcano"
DEFAULT_QUEUE: Final = "default"
QUEUES_PATH: Final = "/apis/scheduling.volcano.sh/v1beta1/queues"
# Where a PodCliqueSet names its Volcano queue (Grove's key; a label or an annotation).
QUEUE_KEY: Final = "scheduling.grove.io/volcano-queue"


def capped_queue(name: str, gpus: int) -> dict[str, Any]:
    """A Volcano Queue whose gangs may hold ``gpus`` GPUs at most."""
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": {"weight": 1, "capability": {"nvidia.com/gpu": str(gpus)}},
    }


# Volcano's shipped configuration: gang in the first tier (all or nothing, per-task minimums),
# queue shares and capabilities (proportion) and the usual node filters in the second.
SCHEDULER_CONF: Final = {
    "actions": "enqueue, allocate, backfill",
    "tiers": [
        {"plugins": [{"name": "priority"}, {"name": "gang"}, {"name": "conformance"}]},
        {
            "plugins": [
                {"name": "overcommit"},
                {"name": "drf"},
                {"name": "predicates"},
                {"name": "proportion"},
                {"name": "nodeorder"},
                {"name": "binpack"},
            ]
        },
    ],
}


def scheduler_args(
    binary: Path, *, kubeconfig: Path, conf: Path, scheduler_name: str, healthz: int, metrics: int
) -> list[str | Path]:
    return [
        binary,
        f"--kubeconfig={kubeconfig}",
        f"--scheduler-conf={conf}",
        f"--scheduler-name={scheduler_name}",
        "--leader-elect=false",
        "--enable-healthz=true",
        f"--healthz-address=127.0.0.1:{healthz}",
        "--enable-metrics=true",
        f"--listen-address=127.0.0.1:{metrics}",
        # It writes a dump of its cache on SIGUSR2 only; never into /tmp unasked.
        "--cache-dumper=false",
        "-v=1",
    ]


def write_module(directory: Path | None = None) -> None:
    VOLCANO.write("Volcano's scheduler Gangway tests and `gangway up` run", directory=directory)
