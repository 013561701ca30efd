"""A real node joined to a local control plane: containerd, runc, the kubelet, kube-proxy and
CoreDNS on this machine, so that containers really start (kwok only pretends).

Everything of the node lives in a network namespace of its own, ``gangway-node``, joined to
the host by one veth pair: the node is 10.254.0.1, the host end 10.254.0.2. The control plane
listens on the host end (:meth:`ControlPlane.start` with ``in_cluster_address``), so tests on
the host and pods on the node reach the same address; the host routes the pod range into the
veth (the API server dials a webhook's pods), and that route goes with the veth. Inside the
namespace: IP forwarding and bridged-traffic filtering (that namespace's sysctls only), a CNI
bridge for pods, kube-proxy's iptables rules, CoreDNS on the node's address as the cluster's
DNS. containerd runs in a private mount namespace; the kubelet and CoreDNS join it, so every
mount they make dies with it. The kernel tunables the kubelet would otherwise set host-wide
are shown to it, in that mount namespace, as files holding the values it checks for.

Stopping kills every process of the node (its services by PID, then whatever runs in its
pods' cgroups and its namespace), removes the pods' cgroups and the namespace. A run killed
before that is cleaned up by the next start: one real node per machine.

    with RealNode.start(images) as node:
        node.control_plane.kubeconfig   # Ready node `gangway-node`, images loaded
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster import coredns, processes
from gangway_localcluster.build import cache_root, ensure_binaries, ensure_node_binaries, locked
from gangway_localcluster.controlplane import APIError, ControlPlane
from gangway_localcluster.images import NodeImages, ensure_node_images, ensure_packages, save
from gangway_localcluster.nodes import is_ready

NODE_NAME: Final = "gangway-node"
NETNS: Final = "gangway-node"
NODE_IP: Final = "10.254.0.1"
HOST_IP: Final = "10.254.0.2"  # the control plane's address
LINK_PREFIX: Final = 30
NODE_LINK: Final = "gw-node"
HOST_LINK: Final = "gw-host"
POD_SUBNET: Final = "10.244.0.0/24"
CNI_BRIDGE: Final = "gwcni0"
CNI_BIN: Final = Path("/usr/lib/cni")
DNS_PORT: Final = 53
# The sysctls the kubelet checks with protectKernelDefaults, at the values it wants.
KERNEL_DEFAULTS: Final = {
    "vm/overcommit_memory": "1",
    "kernel/panic": "10",
    "kernel/panic_on_oops": "1",
}
# The cgroup the kubelet puts pods under (cgroupfs driver), in each v1 hierarchy.
CGROUP_V1: Final = Path("/sys/fs/cgroup")
PODS_CGROUP: Final = "kubepods"
READY_WITHIN: Final = 120.0


def _ip(*args: str) -> None:
    processes.run(["ip", *args])


def _in_netns(*args: str | Path) -> list[str | Path]:
    """A command run in the node's network namespace (mounts stay the host's)."""
    return ["nsenter", f"--net=/run/netns/{NETNS}", *args]


@dataclass(kw_only=True)
class RealNode(processes.Supervised):
    control_plane: ControlPlane
    images: NodeImages
    _containerd_pid: int = 0
    # Holds the machine's one-real-node lock until stop().
    _held: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    @property
    def socket(self) -> Path:
        return self.workdir / "containerd" / "containerd.sock"

    @classmethod
    def start(
        cls,
        node_images: NodeImages | None = None,
        *,
        crds: Sequence[Path] = (),
        schedulers: dict[str, str] | None = None,
        log: bool = True,
    ) -> RealNode:
        """Build what is missing, start the control plane on the host end and the node
        behind it, load the images, and wait for the node to be Ready."""
        ensure_packages()
        node_images = node_images or ensure_node_images(log)
        binaries = ensure_binaries(log=log)
        kubelet, kube_proxy = ensure_node_binaries(log=log)
        dns = coredns.ensure_coredns(log=log)
        held = contextlib.ExitStack()
        held.enter_context(locked(cache_root() / ".real-node.lock"))
        try:
            _clean_leftovers()
            _make_network()
            control_plane = ControlPlane.start(
                binaries,
                crds=crds,
                scheduling=True,
                schedulers=schedulers,
                in_cluster_address=HOST_IP,
            )
        except BaseException:
            _clean_leftovers()
            held.close()
            raise
        node = cls(
            workdir=Path(tempfile.mkdtemp(prefix="gangway-node-")),
            control_plane=control_plane,
            images=node_images,
            _held=held,
        )
        try:
            node._start_containerd()
            node.load(node_images.all())
            node._start_dns(dns)
            node._start_kubelet(kubelet)
            node._start_kube_proxy(kube_proxy)
            node._wait_ready()
        except BaseException:
            node.stop()
            raise
        return node

    # --- the node's services --------------------------------------------------------

    def _start_containerd(self) -> None:
        root = self.workdir / "containerd"
        cni = self.workdir / "cni"
        cni.mkdir(parents=True)
        (cni / "10-gangway.conflist").write_text(json.dumps(_cni_config(self.workdir)))
        config = root / "config.toml"
        root.mkdir(parents=True, exist_ok=True)
        config.write_text(_containerd_config(root, cni, self.images.pause))
        child = self._spawn(
            "containerd",
            # A mount namespace of its own, slave to the host's: its mounts (and the
            # kubelet's, which joins it) never reach the host and die with it.
            _in_netns("unshare", "--mount", "--propagation", "slave", "containerd", "-c", config),
        )
        self._containerd_pid = child.popen.pid
        processes.wait_until(self.socket.exists, child, "its socket", 30)
        self._shadow_kernel_defaults()

    def _spawn(
        self, name: str, args: Sequence[str | Path], max_log_bytes: int | None = None
    ) -> processes.Child:
        """Start ``name`` as one of the node's processes, its log in ``logs/<name>.log``."""
        child = processes.start(
            name, args, self.workdir / "logs" / f"{name}.log", max_log_bytes=max_log_bytes
        )
        self._children.append(child)
        return child

    def _shadow_kernel_defaults(self) -> None:
        """In the node's mount namespace, the tunables the kubelet checks read as it wants:
        it never writes the host's."""
        shadows = self.workdir / "sysctl"
        shadows.mkdir()
        for name, value in KERNEL_DEFAULTS.items():
            shadow = shadows / name.replace("/", ".")
            shadow.write_text(f"{value}\n")
            self._in_node(["mount", "--bind", str(shadow), f"/proc/sys/{name}"])

    def _in_node(self, args: list[str | Path]) -> None:
        """Run ``args`` to the end in containerd's namespaces."""
        processes.run(self._joined(args))

    def _joined(self, args: list[str | Path]) -> list[str | Path]:
        """``args`` as a command in containerd's namespaces (network and mounts)."""
        return ["nsenter", "-t", str(self._containerd_pid), "-m", "-n", *args]

    def load(self, names: Sequence[str]) -> None:
        """The images, from podman's store into containerd's (the kubelet never pulls)."""
        archive = save(names, self.workdir / "images.tar")
        processes.run(
            ["ctr", "--address", self.socket, "-n", "k8s.io", "images", "import", archive]
        )
        archive.unlink()

    def chart_values(self) -> dict[str, Any]:
        """Gangway's chart values that run it from the images loaded here (never pulled)."""
        repository, tag = self.images.gangway.rsplit(":", 1)
        return {
            "image": {"repository": repository, "tag": tag, "pullPolicy": "Never"},
            "nats": {"image": self.images.nats},
        }

    def host_volumes(self, prefix: str, count: int, size: str = "1Gi") -> None:
        """``count`` PersistentVolumes ``<prefix>-<i>`` on folders of the node's: it has no
        provisioner, so a claim that asks no class binds to one of these."""
        for i in range(count):
            path = self.workdir / "volumes" / f"{prefix}-{i}"
            path.mkdir(parents=True, exist_ok=True)
            path.chmod(0o777)  # hostPath ignores fsGroup: whoever the pod runs as may write
            self.control_plane.create(
                "/api/v1/persistentvolumes",
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {"name": f"{prefix}-{i}"},
                    "spec": {
                        "capacity": {"storage": size},
                        "accessModes": ["ReadWriteOnce"],
                        "persistentVolumeReclaimPolicy": "Retain",
                        "hostPath": {"path": str(path), "type": "Directory"},
                    },
                },
            )

    def _start_dns(self, binary: Path) -> None:
        ready = processes.free_port()
        conf = self.workdir / "Corefile"
        conf.write_text(
            coredns.corefile(self.control_plane.kubeconfig, DNS_PORT, ready, bind=NODE_IP)
        )
        child = self._spawn(
            "coredns", self._joined([binary, "-conf", conf, "-dns.port", str(DNS_PORT)])
        )
        url = f"http://{NODE_IP}:{ready}/ready"
        processes.wait_until(partial(processes.http_ok, url), child, url, 30)

    def _start_kubelet(self, binary: Path) -> None:
        config = self.workdir / "kubelet.yaml"
        config.write_text(yaml.safe_dump(_kubelet_config(self.workdir, self.socket)))
        self._spawn(
            "kubelet",
            self._joined(
                [
                    binary,
                    f"--config={config}",
                    f"--kubeconfig={self.control_plane.kubeconfig}",
                    f"--root-dir={self.workdir / 'kubelet'}",
                    f"--hostname-override={NODE_NAME}",
                    f"--node-ip={NODE_IP}",
                    "-v=1",
                ]
            ),
            max_log_bytes=20 * 1024 * 1024,
        )

    def _start_kube_proxy(self, binary: Path) -> None:
        config = self.workdir / "kube-proxy.yaml"
        config.write_text(yaml.safe_dump(_kube_proxy_config(self.control_plane.kubeconfig)))
        self._spawn("kube-proxy", self._joined([binary, f"--config={config}", "-v=1"]))

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + READY_WITHIN
        while True:
            for child in self._children:
                if not child.alive():
                    raise RuntimeError(f"{child.name} exited:\n{child.log_tail()}")
            with contextlib.suppress(APIError, OSError):  # not registered yet
                _, found = self.control_plane.request("GET", f"/api/v1/nodes/{NODE_NAME}")
                if is_ready(found):
                    return
            if time.monotonic() > deadline:
                kubelet = self.child("kubelet")
                raise TimeoutError(f"{NODE_NAME} not Ready:\n{kubelet.log_tail()}")
            time.sleep(0.2)

    # --- stopping ---------------------------------------------------------------------

    def stop(self) -> None:
        owns, self._owns_workdir = self._owns_workdir, False
        super().stop()  # the node's services, newest first
        _clean_leftovers()  # pods' processes, containerd's shims, cgroups, the namespace
        self.control_plane.stop()
        if owns:  # containerd's snapshots: files no mount holds any more
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._held.close()


def _make_network() -> None:
    _ip("netns", "add", NETNS)
    _ip("link", "add", HOST_LINK, "type", "veth", "peer", "name", NODE_LINK)
    _ip("link", "set", NODE_LINK, "netns", NETNS)
    _ip("addr", "add", f"{HOST_IP}/{LINK_PREFIX}", "dev", HOST_LINK)
    _ip("link", "set", HOST_LINK, "up")
    # Pods are reached through the node (the API server calls webhooks at pod IPs); the
    # host forwards nothing itself.
    _ip("route", "add", POD_SUBNET, "via", NODE_IP, "dev", HOST_LINK)
    _ip("-n", NETNS, "link", "set", "lo", "up")
    _ip("-n", NETNS, "addr", "add", f"{NODE_IP}/{LINK_PREFIX}", "dev", NODE_LINK)
    _ip("-n", NETNS, "link", "set", NODE_LINK, "up")
    _ip("-n", NETNS, "route", "add", "default", "via", HOST_IP)
    processes.run(
        _in_netns(
            "sysctl",
            "-q",
            "-w",
            "net.ipv4.ip_forward=1",
            "net.bridge.bridge-nf-call-iptables=1",
            "net.ipv4.conf.all.route_localnet=1",
        )
    )


def _clean_leftovers() -> None:
    """Kill whatever a node left running (its pods, containerd and its shims), remove the
    pods' cgroups and the namespace (with it the veth and the host's route)."""
    for _ in range(50):
        pids = _pids_in_pod_cgroups() | _pids_in_netns()
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.1)
    _remove_pod_cgroups()
    if Path(f"/run/netns/{NETNS}").exists():
        subprocess.run(["ip", "netns", "delete", NETNS], check=False, capture_output=True)
    subprocess.run(["ip", "link", "delete", HOST_LINK], check=False, capture_output=True)


def _pids_in_netns() -> set[int]:
    if not Path(f"/run/netns/{NETNS}").exists():
        return set()
    done = subprocess.run(
        ["ip", "netns", "pids", NETNS], capture_output=True, text=True, check=False
    )
    return {int(p) for p in done.stdout.split()}


def _pod_cgroups() -> list[Path]:
    """Every pods' cgroup, deepest first, in every v1 hierarchy."""
    found: list[Path] = []
    for hierarchy in CGROUP_V1.iterdir():
        top = hierarchy / PODS_CGROUP
        if top.is_dir() and not top.is_symlink():
            found += sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
            found.append(top)
    return found


def _pids_in_pod_cgroups() -> set[int]:
    pids: set[int] = set()
    for cgroup in _pod_cgroups():
        with contextlib.suppress(OSError):
            pids |= {int(p) for p in (cgroup / "cgroup.procs").read_text().split()}
    return pids


def _remove_pod_cgroups() -> None:
    for cgroup in _pod_cgroups():
        with contextlib.suppress(OSError):
            cgroup.rmdir()


# --- configurations -------------------------------------------------------------------


def _containerd_config(root: Path, cni: Path, pause: str) -> str:
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    return f"""\
version = 2
root = "{root / "root"}"
state = "{root / "state"}"
[grpc]
  address = "{root / "containerd.sock"}"
[{cri}]
  sandbox_image = "{pause}"
  # No CAP_SYS_RESOURCE here: a container may not lower its OOM score below containerd's.
  restrict_oom_score_adj = true
  # Pods' network namespaces under its state (ours), not in the host's /run/netns.
  netns_mounts_under_state_dir = true
  [{cri}.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [{cri}.containerd.runtimes.runc.options]
      SystemdCgroup = false
  [{cri}.cni]
    bin_dir = "{CNI_BIN}"
    conf_dir = "{cni}"
"""


def _cni_config(workdir: Path) -> dict[str, Any]:
    """A bridge on the node for its pods, addresses from POD_SUBNET; no masquerading (the
    host routes the pods' range back to the node)."""
    return {
        "cniVersion": "0.4.0",
        "name": "gangway",
        "plugins": [
            {
                "type": "bridge",
                "bridge": CNI_BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,  # a pod reaching itself through its Service
                "ipam": {
                    "type": "host-local",
                    "ranges": [[{"subnet": POD_SUBNET}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                    "dataDir": str(workdir / "cni-ipam"),
                },
            },
            {"type": "portmap", "capabilities": {"portMappings": True}},
        ],
    }


def _kubelet_config(workdir: Path, socket: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        # 1.37 refuses cgroup v1 unless told (maintenance mode); this machine has no v2.
        "failCgroupV1": False,
        "cgroupDriver": "cgroupfs",
        "failSwapOn": False,
        # Check the kernel tunables, never set them (they are the host's).
        "protectKernelDefaults": True,
        "containerRuntimeEndpoint": f"unix://{socket}",
        "address": NODE_IP,
        "readOnlyPort": 0,
        "healthzBindAddress": "127.0.0.1",
        "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
        "authorization": {"mode": "AlwaysAllow"},
        "clusterDNS": [NODE_IP],
        "clusterDomain": "cluster.local",
        "resolvConf": "",  # pods get the cluster's DNS only: the host's may be unreachable
        "podLogsDir": str(workdir / "pod-logs"),
        # A test machine's disk may be fuller than eviction defaults like; evict never.
        "evictionHard": {"memory.available": "0%", "nodefs.available": "0%"},
        "imageGCHighThresholdPercent": 100,
        "imageGCLowThresholdPercent": 99,
        "serializeImagePulls": False,
    }


def _kube_proxy_config(kubeconfig: Path) -> dict[str, Any]:
    return {
        "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
        "kind": "KubeProxyConfiguration",
        "mode": "iptables",
        "clientConnection": {"kubeconfig": str(kubeconfig)},
        "hostnameOverride": NODE_NAME,
        "clusterCIDR": POD_SUBNET,
        # Its health and metrics ports are the node's namespace's: no clash with the host.
        "healthzBindAddress": f"{NODE_IP}:10256",
        # Zeros: leave the conntrack table's size and timeouts (host-wide) as they are.
        "conntrack": {
            "maxPerCore": 0,
            "min": 0,
            "tcpEstablishedTimeout": "0s",
            "tcpCloseWaitTimeout": "0s",
        },
    }
