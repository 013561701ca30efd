"""scheduler-plugins' scheduler from its Go module, run as a second scheduler whose one
profile enables the Coscheduling plugin, and the PodGroup CRD it reads.

Coscheduling holds each pod of a PodGroup (``scheduling.x-k8s.io/v1alpha1``) in Permit until
``minMember`` of them have nodes, then lets them bind together. The scheduler is
kube-scheduler with scheduler-plugins' plugins compiled in; nothing else of scheduler-plugins
is needed to place a gang (its controller only writes PodGroup status).

Version :data:`SCHEDULER_PLUGINS_VERSION` is the newest release the Go module proxy serves
(v0.35.x and v0.36.x answer 403). Its go.mod replaces every Kubernetes staging module, so
``go install`` refuses it; a wrapper module (``tools/scheduler-plugins``) copies its
requirements and replaces. The proxy does not serve eleven staging modules at the release's
own v0.34.7, so the wrapper moves Kubernetes to :data:`KUBERNETES_PATCH`, the nearest patch
release it serves whole; the three sample modules, which nothing imports and whose v0.34.9
the checksum database does not know, stay at v0.34.3. The CRD comes from the same module
download as the binary.

    python -m gangway_localcluster --write-module   # regenerates tools/scheduler-plugins
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from gangway_localcluster.build import SecondScheduler, WrappedModule, module_dir

SCHEDULER_PLUGINS_VERSION: Final = "0.34.7"
MODULE: Final = "sigs.k8s.io/scheduler-plugins"
KUBERNETES_PATCH: Final = "1.34.9"
# Staging modules only k8s.io/kubernetes's module graph names (nothing imports them).
SAMPLE_MODULES: Final = ("sample-apiserver", "sample-cli-plugin", "sample-controller")
SAMPLES_VERSION: Final = "0.34.3"
BINARY: Final = "scheduler-plugins"
PACKAGES: Final = {f"{MODULE}/cmd/scheduler": BINARY}
CRDS: Final = ("config/crd/bases/scheduling.x-k8s.io_podgroups.yaml",)
# The name scheduler-plugins' own second-scheduler install gives it.
SCHEDULER_NAME: Final = "scheduler-plugins-scheduler"
# How long a rejected gang's pods wait before the scheduler tries them again unasked.
UNSCHEDULABLE_FLUSH_SECONDS: Final = 15
SCHEDULER_PLUGINS: Final = WrappedModule(
    "scheduler-plugins", MODULE, SCHEDULER_PLUGINS_VERSION, PACKAGES, CRDS
)
SCHEDULER: Final = SecondScheduler(
    SCHEDULER_PLUGINS,
    BINARY,
    # Coscheduling at every extension point it has and as the only queue sort (it keeps a
    # gang's pods together in the queue), as scheduler-plugins' own sample.
    plugins={
        "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
        "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
    },
    # Coscheduling rejects a whole gang when one pod does not fit, and its pods come back only
    # on a pod or PodGroup event, or when the scheduler flushes unschedulable pods (5 min by
    # default): new nodes alone do not retry them. docs/backends.md says so.
    extra_args=(f"--pod-max-in-unschedulable-pods-duration={UNSCHEDULABLE_FLUSH_SECONDS}s",),
)


def pins(upstream_go_mod: str) -> dict[str, str]:
    """Every Kubernetes module the release pins at its own patch, moved to KUBERNETES_PATCH."""
    staging = "0." + KUBERNETES_PATCH.split(".", 1)[1]
    found: dict[str, str] = {"k8s.io/kubernetes": KUBERNETES_PATCH}
    for module in _staging_names(upstream_go_mod):
        sample = module.removeprefix("k8s.io/") in SAMPLE_MODULES
        found[module] = SAMPLES_VERSION if sample else staging
    return found


def _staging_names(go_mod: str) -> list[str]:
    """k8s.io/* modules the release requires or replaces at its own version (v0.34.7)."""
    own = re.escape(SCHEDULER_PLUGINS_VERSION)
    return sorted(set(re.findall(rf"(?<![\w./-])(k8s\.io/[\w.-]+) v{own}$", go_mod, re.M)))


def write_module(directory: Path | None = None) -> None:
    upstream = (module_dir(MODULE, SCHEDULER_PLUGINS_VERSION) / "go.mod").read_text()
    SCHEDULER_PLUGINS.write(
        "scheduler-plugins' scheduler (Coscheduling) Gangway tests and `gangway up` run",
        pins=pins(upstream),
        directory=directory,
    )
