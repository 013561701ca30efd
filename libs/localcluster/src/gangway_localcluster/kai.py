"""The KAI scheduler from its Go module: its scheduler and binder, the CRDs they serve, and
the queues a local cluster starts with.

KAI places a gang in two steps: ``kai-scheduler`` picks nodes for a whole PodGroup and writes
one BindRequest per pod; ``kai-binder`` binds each pod as its BindRequest says. Nothing else
of KAI is needed for that: Gangway writes the PodGroups itself (KAI's pod-grouper is not
run), and its admission webhooks, queue and podgroup status controllers only report.

Version :data:`KAI_VERSION` is the newest release the Go module proxy serves whole (0.12.1 to
0.15.x and 0.16.1 on answer 403 "not available"; 0.16.0 serves its source but not its go.mod).
``go install …@v0.12.0`` is refused as well: it looks the module's deprecation up in its
version list, which the proxy does not serve. So a small wrapper module (``tools/kai``)
requires KAI with KAI's own pins, unchanged, and builds its two commands; ``go.sum`` pins
every checksum. The CRDs come from the same module download, so they match the binaries.

    python -m gangway_localcluster --write-module   # regenerates tools/kai too
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gangway_localcluster.build import WrappedModule

KAI_VERSION: Final = "0.12.0"
KAI_MODULE: Final = "github.com/NVIDIA/KAI-scheduler"
# Package in the module → binary name.
PACKAGES: Final = {
    f"{KAI_MODULE}/cmd/scheduler": "kai-scheduler",
    f"{KAI_MODULE}/cmd/binder": "kai-binder",
}
# What the scheduler and binder list and watch of KAI's own kinds (configs and scheduling
# shards are its operator's, not run here).
CRDS: Final = tuple(
    f"deployments/kai-scheduler/crds/{name}.yaml"
    for name in (
        "scheduling.run.ai_podgroups",
        "scheduling.run.ai_queues",
        "scheduling.run.ai_bindrequests",
        "kai.scheduler_topologies",
    )
)
SCHEDULER_NAME: Final = "kai-scheduler"
QUEUES_PATH: Final = "/apis/scheduling.run.ai/v2/queues"
# KAI's own quick-start names: a department and the queue under it that its pod-grouper
# falls back on. KAI schedules only from queues with a parent.
DEFAULT_PARENT_QUEUE: Final = "default-parent-queue"
DEFAULT_QUEUE: Final = "default-queue"


@dataclass(frozen=True)
class KaiBinaries:
    scheduler: Path
    binder: Path
    crds: tuple[Path, ...]
    version: str


KAI: Final = WrappedModule("kai", KAI_MODULE, KAI_VERSION, PACKAGES, CRDS)


def ensure_kai(log: bool = False) -> KaiBinaries:
    """KAI's scheduler and binder, built once from the wrapper module, and its CRDs."""
    target = KAI.build(log)
    return KaiBinaries(
        scheduler=target / "kai-scheduler",
        binder=target / "kai-binder",
        crds=KAI.crds(),
        version=KAI_VERSION,
    )


def write_module(directory: Path | None = None) -> None:
    """Generate the wrapper module: KAI's own pins, unchanged, so the build resolves exactly
    the graph KAI releases with (gpu-operator's pseudo-version is known only to KAI's go.sum)."""
    KAI.write(
        "the KAI scheduler and binder Gangway tests and `gangway up` run", directory=directory
    )


def scheduler_args(binaries: KaiBinaries, metrics_port: int, plugin_port: int) -> list[str]:
    # The kubeconfig comes from KUBECONFIG: KAI's scheduler parses only its own flags.
    return [
        str(binaries.scheduler),
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--listen-address=127.0.0.1:{metrics_port}",
        # Its plugin server listens on every interface: a free port keeps instances apart.
        f"--plugin-server-port={plugin_port}",
        "--leader-elect=false",
        # Marks a pod it evicts (DisruptionTarget, naming the preemptor): podgang says the
        # gang was Preempted, and by whom, rather than only that it no longer fits.
        "--update-pod-eviction-condition=true",
    ]


def binder_args(binaries: KaiBinaries, metrics_port: int, probe_port: int) -> list[str]:
    return [
        str(binaries.binder),
        f"--scheduler-name={SCHEDULER_NAME}",
        f"--metrics-bind-address=127.0.0.1:{metrics_port}",
        f"--health-probe-bind-address=127.0.0.1:{probe_port}",
        "--leader-elect=false",
    ]


def queue(
    name: str, parent: str | None = None, gpu_quota: float = -1, gpu_limit: float = -1
) -> dict[str, Any]:
    """A KAI Queue; -1 is KAI's "unlimited". CPU and memory are left unlimited."""
    unlimited = {"quota": -1, "limit": -1, "overQuotaWeight": 1}
    spec: dict[str, Any] = {
        "resources": {
            "gpu": {"quota": gpu_quota, "limit": gpu_limit, "overQuotaWeight": 1},
            "cpu": unlimited,
            "memory": unlimited,
        }
    }
    if parent:
        spec["parentQueue"] = parent
    return {
        "apiVersion": "scheduling.run.ai/v2",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def queues(name: str, department: str, gpu_limit: float = -1) -> list[dict[str, Any]]:
    """Queue ``name`` and the department it sits under (KAI schedules only from a queue with
    a parent), department first; ``gpu_limit`` caps the GPUs the queue's running gangs hold
    (its quota too)."""
    return [
        queue(department),
        queue(name, parent=department, gpu_quota=gpu_limit, gpu_limit=gpu_limit),
    ]


QUEUE_LABEL: Final = "kai.scheduler/queue"  # where a PodCliqueSet names its KAI queue


def default_queues() -> list[dict[str, Any]]:
    """KAI's default department and queue, unlimited: what a local cluster starts with."""
    return queues(DEFAULT_QUEUE, DEFAULT_PARENT_QUEUE)
