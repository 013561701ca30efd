"""``gangway up --node``: the local cluster with one real node (containerd, the kubelet), where
Gangway's Helm chart is rehearsed as a platform engineer would install it.

Gangway's own processes do not start here: the chart runs them, in containers of the image
built from this checkout, on the real node. ``up`` gives the cluster what a real one would
have and the local one lacks (volumes for the chart's NATS servers) and says the commands;
installing is the user's step. Running both Gangways on one cluster would have two of them
act on every PodCliqueSet (and their webhooks collide), so ``--node`` is the switch between
them.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import yaml

from gangway_localcluster.helm import ensure_helm
from gangway_localcluster.realnode import NODE_NAME, RealNode

NAMESPACE: Final = "gangway-system"  # the chart's, as docs/operations.md installs it
RELEASE: Final = "gangway"
NATS_SERVERS: Final = 3  # the chart's bundled NATS cluster: one claim each
CHART: Final = Path("deploy/charts/gangway")  # as the README's commands, from the checkout
SAMPLE: Final = Path("cli/src/gangway_cli/samples/default-scheduler.yaml")


def why_not() -> str | None:
    """Why this machine cannot run the real node, or None."""
    if os.geteuid() != 0:
        return (
            "--node: a real node needs root (a network namespace, containerd, the kubelet); "
            "without --node, up runs Gangway itself on kwok nodes"
        )
    return None


def prepare(node: RealNode, state: Path) -> Path:
    """What the chart needs of the cluster, made: the NATS servers' volumes (the node has
    no provisioner), and the values that point the chart at the images loaded on the node
    and keep Gangway's pods on it (kwok's nodes run nothing). Returns the values file."""
    node.host_volumes("gangway-nats", NATS_SERVERS)
    values = state / "chart-values.yaml"
    on_the_node = {"nodeSelector": {"kubernetes.io/hostname": NODE_NAME}}
    values.write_text(yaml.safe_dump({**node.chart_values(), **on_the_node}, sort_keys=False))
    return values


def helm_install(values: Path) -> list[str]:
    """The command that installs the chart as rehearsed: the small profile, then ``values``."""
    return [
        *("helm", "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace"),
        *("--values", str(CHART / "values-small.yaml"), "--values", str(values)),
    ]


def tools(node: RealNode) -> str:
    """kubectl, helm and gangway, as a PATH prefix."""
    found = [node.control_plane.binaries.kubectl, ensure_helm(), Path(sys.executable)]
    return ":".join(str(binary.parent) for binary in found)


def environment(node: RealNode) -> dict[str, str]:
    """A shell's settings for the rehearsal: kubectl's cluster, the tools on PATH."""
    path = f"{tools(node)}:{os.environ.get('PATH', '')}"
    return {"KUBECONFIG": str(node.control_plane.kubeconfig), "PATH": path}


def next_steps(node: RealNode, values: Path) -> Iterator[str]:
    yield f"  a real node, {NODE_NAME} (containerd, runc, kubelet, kube-proxy; CoreDNS as the"
    yield f"  cluster's DNS), with {', '.join(node.images.all())} loaded: the kubelet never pulls"
    yield "Gangway does not run here: rehearse its Helm chart on the real node, in another shell:"
    yield f"  export KUBECONFIG={shlex.quote(str(node.control_plane.kubeconfig))}"
    yield f"  export PATH={shlex.quote(tools(node))}:$PATH"
    yield f"  {shlex.join(helm_install(values))}"
    yield f"  kubectl -n {NAMESPACE} get pods -o wide   # every Gangway pod Ready on {NODE_NAME}"
    yield (
        f"  kubectl apply --server-side -f {SAMPLE}   # placed on kwok's nodes by kube-scheduler,"
        " through the chart's Gangway"
    )
    yield "  kubectl get podcliquesets,podgangs,pods -o wide"
    yield f"  helm uninstall {RELEASE} -n {NAMESPACE}   # the CRDs and your PodCliqueSets stay"
