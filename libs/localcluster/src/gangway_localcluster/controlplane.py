"""A real Kubernetes control plane on loopback: etcd, kube-apiserver, kube-controller-manager,
and on request kube-scheduler with kwok's fake nodes.

The API server runs with the Workload API switched on (feature gates plus the runtime
config of its minor), RBAC authorization and client-certificate authentication; the
controller manager runs the garbage collector and the namespace controller, so owner
references cascade and namespaces finish deleting as on a real cluster. With
``scheduling=True`` kube-scheduler (same version, same gates) places pods on the nodes
:meth:`ControlPlane.add_nodes` describes, and kwok marks those nodes Ready and runs the pods
bound to them. Without it pods stay unscheduled. ``schedulers`` adds the schedulers of other
backends beside it, by backend → the schedulerName each serves (:data:`LOCAL_SCHEDULERS`, one
small description each: KAI's scheduler and binder, scheduler-plugins' Coscheduling,
Koordinator's koord-scheduler, Volcano's vc-scheduler), each with its CRDs.

    with ControlPlane.start(scheduling=True, schedulers={"kai-scheduler": "kai-scheduler"}) as cp:
        cp.add_nodes(NodePool(count=4, gpus=8))
        print(cp.kubeconfig)
"""

from __future__ import annotations

import base64
import http.client
import json
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster import coredns, processes
from gangway_localcluster import coscheduling as scheduler_plugins
from gangway_localcluster import kai as kai_scheduler
from gangway_localcluster import koordinator as koord
from gangway_localcluster import kueue as queueing
from gangway_localcluster import volcano as vc
from gangway_localcluster.build import Binaries, SecondScheduler, WrappedModule, ensure_binaries
from gangway_localcluster.certs import CertificateAuthority, KeyPair, signing_key_pair
from gangway_localcluster.nodes import MANAGED_BY_KWOK, NodePool, is_ready

# The Workload API version each Kubernetes minor serves (each replaced the previous one
# without conversion, so a control plane pins one minor).
WORKLOAD_API: Final = {35: "v1alpha1", 36: "v1alpha2", 37: "v1beta1", 38: "v1beta1"}
SERVICE_CIDR: Final = "10.0.0.0/24"
# kwok's pod IPs: apart from the service range, and room for a million pods (a /16 holds
# 65 534, short of a 100 000-pod run). kwok's podIPs refusals ("no more than one IP for each
# IP family") come on this range too: kwok replaying a stage from stale events (bench/RESULTS.md).
POD_CIDR: Final = "10.128.0.0/12"
# kube-scheduler logs little at verbosity 1; an unplaceable gang is retried without backoff,
# so its log is capped all the same.
SCHEDULER_VERBOSITY: Final = 1
SCHEDULER_LOG_BYTES: Final = 20 * 1024 * 1024
ADMIN_USER: Final = "gangway-admin"
LOOPBACK: Final = "127.0.0.1"
# The `kubernetes` Service: the first address of SERVICE_CIDR, and its names.
KUBERNETES_SERVICE_IP: Final = "10.0.0.1"
KUBERNETES_SERVICE_NAMES: Final = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)
# What an in-cluster install needs beyond the loopback set: Deployments, the StatefulSet of
# NATS and its volumes, the chart's Jobs, default ServiceAccounts, kube-root-ca.crt.
IN_CLUSTER_CONTROLLERS: Final = [
    "deployment-controller",
    "replicaset-controller",
    "statefulset-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "endpoints-controller",
    "serviceaccount-controller",
    "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "persistentvolume-binder-controller",
    "persistentvolume-protection-controller",
    "persistentvolumeclaim-protection-controller",
    "disruption-controller",
    "clusterrole-aggregation-controller",
    "pod-garbage-collector-controller",
]
FIELD_MANAGER: Final = "gangway-localcluster"


def _unverified() -> ssl.SSLContext:
    """For a scheduler's /readyz: it serves on a certificate it made itself."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    return context


def feature_gates(minor: int) -> str:
    """The gates the Workload API needs: 1.37 folded GangScheduling into GenericWorkload
    (and refuses the old name), and has CompositePodGroup (which needs
    TopologyAwareWorkloadScheduling): a PodGang placed whole, as one tree."""
    if minor >= 37:
        return "GenericWorkload=true,CompositePodGroup=true,TopologyAwareWorkloadScheduling=true"
    return "GenericWorkload=true,GangScheduling=true"


def runtime_config(minor: int) -> str:
    """The Workload API's version, and CompositePodGroup's where it differs (1.37: v1alpha3
    beside v1beta1's Workload and PodGroups; 1.38 serves all three in v1beta1)."""
    found = f"scheduling.k8s.io/{WORKLOAD_API[minor]}=true"
    return found + (",scheduling.k8s.io/v1alpha3=true" if minor == 37 else "")


class APIError(RuntimeError):
    def __init__(self, status: int, body: Any) -> None:
        self.status = status
        self.body = body
        message = body.get("message") if isinstance(body, dict) else body
        super().__init__(f"HTTP {status}: {message}")


@dataclass(kw_only=True)
class ControlPlane(processes.Supervised):
    server: str
    kubeconfig: Path
    binaries: Binaries
    workload_api_version: str
    _client_ca: CertificateAuthority
    _ca_pem: bytes
    _admin: KeyPair
    _etcd_url: str = ""
    crds: tuple[Path, ...] = ()  # the CRD files start() installed
    # Where the API server listens and what it advertises: loopback, or the address a real
    # node and its pods reach it at (:mod:`gangway_localcluster.realnode`).
    address: str = LOOPBACK
    # The other backends' schedulers running, by backend → the schedulerName each serves.
    schedulers: dict[str, str] = field(default_factory=dict)
    kueue: bool = False  # Kueue's manager runs (start_kueue)
    # kube-scheduler's system-default topology spreading (PodTopologySpread with no
    # constraints of the pod's own): on, as a cluster has it. Its cost grows with the
    # namespace: for each pod it lists every Service there to find those selecting the pod
    # (Grove's headless Service per PodCliqueSet replica does), then counts the matching pods
    # on every node — at 40 000 Services in one namespace, 80 ms of CPU a pod (bench/RESULTS.md).
    default_spreading: bool = True

    # --- lifecycle ----------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        binaries: Binaries | None = None,
        *,
        workdir: Path | None = None,
        controller_manager: bool = True,
        crds: Iterable[Path] = (),
        scheduling: bool = False,
        schedulers: Mapping[str, str] | None = None,
        in_cluster_address: str | None = None,
        default_spreading: bool = True,
    ) -> ControlPlane:
        """Start everything; ``crds`` are installed before the controller manager starts,
        so its garbage collector watches them from its first discovery (else ~30 s later).
        ``scheduling``: kube-scheduler and kwok too (nodes come from :meth:`add_nodes`);
        ``schedulers``: other backends' schedulers as well, by backend (a key of
        :data:`LOCAL_SCHEDULERS`) → the schedulerName it serves, each with its CRDs.
        ``in_cluster_address``: serve a real node's pods too: listen and advertise there
        (the ``kubernetes`` Service's endpoint), with ServiceAccount tokens and the
        controllers in-cluster clients and the chart need. ``default_spreading``: see the
        field."""
        schedulers = dict(schedulers or {})
        if unknown := sorted(set(schedulers) - set(LOCAL_SCHEDULERS)):
            known = ", ".join(LOCAL_SCHEDULERS)
            raise ValueError(f"no local scheduler for {', '.join(unknown)} (known: {known})")
        if schedulers and not scheduling:
            raise ValueError("second schedulers place pods on kwok's nodes: scheduling=True")
        binaries = binaries or ensure_binaries()
        built = [
            (LOCAL_SCHEDULERS[backend], name, LOCAL_SCHEDULERS[backend].build())
            for backend, name in schedulers.items()
        ]
        if binaries.minor not in WORKLOAD_API:
            known = ", ".join(f"1.{m}" for m in sorted(WORKLOAD_API))
            raise RuntimeError(f"Kubernetes {binaries.version}: Workload API known for {known}")
        owns = workdir is None
        workdir = workdir or Path(tempfile.mkdtemp(prefix="gangway-cp-"))
        pki = workdir / "pki"
        pki.mkdir(parents=True, exist_ok=True)

        serving_ca = CertificateAuthority("gangway-local-serving-ca")
        client_ca = CertificateAuthority("gangway-local-client-ca")
        (pki / "serving-ca.crt").write_bytes(serving_ca.cert_pem)
        (pki / "client-ca.crt").write_bytes(client_ca.cert_pem)
        address = in_cluster_address or LOOPBACK
        hosts: tuple[str, ...] = (address, "localhost")
        if in_cluster_address:  # in-cluster clients dial the `kubernetes` Service
            hosts += (KUBERNETES_SERVICE_IP, *KUBERNETES_SERVICE_NAMES)
        serving_ca.issue("kube-apiserver", hosts=hosts, server=True).write(pki, "apiserver")
        _, sa_key = signing_key_pair().write(pki, "sa-signer")
        admin = client_ca.issue(ADMIN_USER, orgs=("system:masters",))

        cp = cls(
            workdir=workdir,
            server="",
            kubeconfig=workdir / "kubeconfig",
            binaries=binaries,
            workload_api_version=WORKLOAD_API[binaries.minor],
            _client_ca=client_ca,
            _ca_pem=serving_ca.cert_pem,
            _admin=admin,
            _owns_workdir=owns,
            address=address,
            default_spreading=default_spreading,
        )
        try:
            cp._etcd_url = cp._start_etcd()
            cp._start_apiserver()
            cp.kubeconfig.write_text(cp._kubeconfig_text(admin, ADMIN_USER))
            cp.kubeconfig.chmod(0o600)
            # Once each: a caller may list KAI's CRDs too (a bench that stores PodGroups
            # with KAI running or not).
            their_crds = [c for local, _, handle in built for c in local.crds(handle)]
            cp.crds = tuple(dict.fromkeys((*crds, *their_crds)))
            cp.install_crds(cp.crds)
            if controller_manager:
                cp._start_controller_manager(sa_key)
            if scheduling:
                cp._start_scheduler()
                cp._start_kwok()
            for local, name, handle in built:
                local.start(cp, name, handle)
                cp.schedulers[local.backend] = name
        except BaseException:
            cp.stop()
            raise
        return cp

    def _start_etcd(self) -> str:
        for _ in range(3):
            client, peer = processes.free_port(), processes.free_port()
            url = f"http://127.0.0.1:{client}"
            child = processes.start(
                "etcd",
                [
                    self.binaries.etcd,
                    f"--data-dir={self.workdir / 'etcd'}",
                    f"--listen-client-urls={url}",
                    f"--advertise-client-urls={url}",
                    f"--listen-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                    f"--initial-cluster=default=http://127.0.0.1:{peer}",
                    "--unsafe-no-fsync=true",  # test data: durability buys nothing here
                    # etcd's 8 GiB ceiling, not its 2 GiB default: 22 000 pods and 11 000
                    # PodGangs filled 455 MB of it, so 100 000 pods would reach the default
                    # (etcd then refuses every write). Space is taken only as it is used.
                    "--quota-backend-bytes=8589934592",
                    "--log-level=warn",
                ],
                self.workdir / "logs" / "etcd.log",
            )
            try:
                processes.wait_until(
                    partial(processes.http_ok, f"{url}/health"), child, "health", 30
                )
            except RuntimeError:
                child.stop()  # it exited: forget it, or stop_all would count it as ours
                continue  # a port was taken between choosing and binding: choose again
            self._children.append(child)
            return url
        raise RuntimeError("etcd did not start on a free port in 3 tries")

    def _start_apiserver(self, port: int | None = None) -> None:
        """On a free port, or on ``port`` again after a restart (clients keep their URL)."""
        pki = self.workdir / "pki"
        cert, key = pki / "apiserver.crt", pki / "apiserver.key"
        sa_pub, sa_key = pki / "sa-signer.crt", pki / "sa-signer.key"
        for _ in range(1 if port else 3):
            chosen = port or processes.free_port()
            server = f"https://{self.address}:{chosen}"
            child = processes.start(
                "kube-apiserver",
                [
                    self.binaries.kube_apiserver,
                    f"--etcd-servers={self._etcd_url}",
                    f"--bind-address={self.address}",
                    f"--advertise-address={self.address}",
                    *self._access_args,
                    f"--secure-port={chosen}",
                    f"--tls-cert-file={cert}",
                    f"--tls-private-key-file={key}",
                    f"--cert-dir={self.workdir / 'apiserver-certs'}",
                    f"--client-ca-file={pki / 'client-ca.crt'}",
                    "--authorization-mode=RBAC",
                    f"--service-cluster-ip-range={SERVICE_CIDR}",
                    f"--service-account-issuer={server}",
                    f"--service-account-key-file={sa_pub}",
                    f"--service-account-signing-key-file={sa_key}",
                    "--allow-privileged=true",
                    f"--feature-gates={self.feature_gates}",
                    f"--runtime-config={runtime_config(self.binaries.minor)}",
                ],
                self.workdir / "logs" / "kube-apiserver.log",
            )
            self.server = server
            try:
                processes.wait_until(self._ready, child, "/readyz", 90)
            except RuntimeError:
                child.stop()  # it exited (a port taken meanwhile): forget it, try again
                continue
            self._children.append(child)
            return
        raise RuntimeError("kube-apiserver did not start on a free port in 3 tries")

    def restart_apiserver(self, down_for: float = 0.0) -> None:
        """Stop the API server and, ``down_for`` seconds later, start it again on the same
        port: every watch breaks and the watch cache starts empty, as in a real
        control-plane upgrade."""
        child = self.child("kube-apiserver")
        child.stop()
        self._children.remove(child)
        time.sleep(down_for)
        self._start_apiserver(port=int(self.server.rsplit(":", 1)[1]))

    @property
    def feature_gates(self) -> str:
        return feature_gates(self.binaries.minor)

    @property
    def in_cluster(self) -> bool:
        return self.address != LOOPBACK

    @property
    def _access_args(self) -> list[str]:
        """How clients reach the API server and it reaches them."""
        if not self.in_cluster:
            return [
                # 1.37 refuses a loopback address for the `kubernetes` Service's endpoints;
                # nothing here reaches the API server through that Service.
                "--endpoint-reconciler-type=none",
                # No controller creates default ServiceAccounts for pods here (as envtest),
                # and none would lift the not-ready taint TaintNodesByCondition puts on a
                # new node (the node lifecycle controller; kwok marks nodes Ready itself).
                "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
            ]
        return [
            # Pods get ServiceAccount tokens; the node's kubelet has no taint to lift.
            "--disable-admission-plugins=TaintNodesByCondition",
            # A webhook's Service is dialled at its pods' IPs (routed to the node), not at a
            # ClusterIP only kube-proxy in the node's network namespace translates.
            "--enable-aggregator-routing=true",
            # `kubectl logs`: dial the kubelet at its node's IP, not a name no DNS here knows.
            "--kubelet-preferred-address-types=InternalIP",
        ]

    @property
    def _controllers(self) -> list[str]:
        """Owner-reference GC, namespace deletion, the endpoint slices of Services (the
        names a headless Service gives its pods), the HPAs Gangway makes of Grove's
        autoscaling (they scale PodCliques and scaling groups through /scale); from 1.36
        also the controller that lifts the protection finalizer of deleted PodGroups (else
        they never go away)."""
        found = [
            "garbage-collector-controller",
            "namespace-controller",
            "endpointslice-controller",
            "horizontal-pod-autoscaler-controller",
        ]
        if self.workload_api_version != "v1alpha1":
            found.append("podgroup-protection-controller")
        if self.in_cluster:
            found += IN_CLUSTER_CONTROLLERS
        return found

    def _start_controller_manager(self, sa_key: Path) -> None:
        child = processes.start(
            "kube-controller-manager",
            [
                self.binaries.kube_controller_manager,
                f"--kubeconfig={self.kubeconfig}",
                f"--controllers={','.join(self._controllers)}",
                "--leader-elect=false",
                "--secure-port=0",
                f"--service-account-private-key-file={sa_key}",
                # Pods' kube-root-ca.crt: the CA that signed the API server's certificate.
                f"--root-ca-file={self.workdir / 'pki' / 'serving-ca.crt'}",
                "--use-service-account-credentials=false",
                # No metrics server runs here: an HPA acts on its bounds alone; looked at
                # every 2 s instead of 15 so a changed bound shows at once.
                "--horizontal-pod-autoscaler-sync-period=2s",
                f"--feature-gates={self.feature_gates}",
            ],
            self.workdir / "logs" / "kube-controller-manager.log",
        )
        # It has no endpoint to poll with --secure-port=0: alive after a moment is enough;
        # the GC proof test shows it working.
        time.sleep(0.5)
        if not child.alive():
            raise RuntimeError(f"kube-controller-manager exited:\n{child.log_tail()}")
        self._children.append(child)

    def _start_scheduler(self) -> None:
        """kube-scheduler with the default profile, in which the Workload API's gates put
        the GangScheduling plugin; ready once its /readyz answers. Without default spreading,
        that profile from a configuration file whose PodTopologySpread has no defaults."""
        port = processes.free_port()
        connection = [f"--kubeconfig={self.kubeconfig}", "--leader-elect=false"]
        if not self.default_spreading:
            connection = [f"--config={self._no_default_spreading()}"]
        self._serve(
            "kube-scheduler",
            [
                self.binaries.kube_scheduler,
                *connection,
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                # No front proxy here: do not look for its CA (else an error every second).
                "--authentication-skip-lookup=true",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                f"--feature-gates={self.feature_gates}",
                f"-v={SCHEDULER_VERBOSITY}",
            ],
            f"https://127.0.0.1:{port}/readyz",
            context=_unverified(),
        )

    def _no_default_spreading(self) -> Path:
        """kube-scheduler's configuration (the connection the flags give otherwise) with
        PodTopologySpread's system defaults off: spreading only where a pod asks for it."""
        spread = {"defaultingType": "List", "defaultConstraints": []}
        profile = {
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "PodTopologySpread", "args": spread}],
        }
        return self._scheduler_config("kube-scheduler", profile)

    def _scheduler_config(self, binary: str, profile: dict[str, Any]) -> Path:
        """A kube-scheduler build's configuration file: this control plane, no leader
        election, one profile."""
        config = self.workdir / f"{binary}-config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "kubescheduler.config.k8s.io/v1",
                    "kind": "KubeSchedulerConfiguration",
                    "leaderElection": {"leaderElect": False},
                    "clientConnection": {"kubeconfig": str(self.kubeconfig)},
                    "profiles": [profile],
                }
            )
        )
        return config

    def _start_kwok(self) -> None:
        """kwok for the nodes :meth:`add_nodes` makes (and only those: it picks them by
        kwok's annotation), with the node and pod stages from its module."""
        key, value = MANAGED_BY_KWOK
        child = processes.start(
            "kwok",
            [
                self.binaries.kwok,
                f"--kubeconfig={self.kubeconfig}",
                *(f"--config={stage}" for stage in self.binaries.kwok_stages),
                f"--manage-nodes-with-annotation-selector={key}={value}",
                f"--cidr={POD_CIDR}",
                "--node-ip=127.0.0.1",
                "--node-lease-duration-seconds=0",  # no lifecycle controller reads leases
                "--server-address=127.0.0.1:0",
            ],
            self.workdir / "logs" / "kwok.log",
        )
        self._children.append(child)
        time.sleep(0.5)
        if not child.alive():
            raise RuntimeError(f"kwok exited:\n{child.log_tail()}")

    def _start_kai(self, binaries: kai_scheduler.KaiBinaries) -> None:
        """KAI's scheduler and binder, each ready once its metrics endpoint answers (both read
        the kubeconfig from KUBECONFIG), and KAI's default department and queue."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig)}
        metrics, plugins, binder_metrics, probe = (processes.free_port() for _ in range(4))
        self._serve(
            "kai-scheduler",
            kai_scheduler.scheduler_args(binaries, metrics, plugins),
            f"http://127.0.0.1:{metrics}/metrics",
            env=env,
        )
        self._serve(
            "kai-binder",
            kai_scheduler.binder_args(binaries, binder_metrics, probe),
            # Its health probe serves no checks: its metrics answer once it runs.
            f"http://127.0.0.1:{binder_metrics}/metrics",
            env=env,
        )
        for queue in kai_scheduler.default_queues():  # as Volcano starts with its own
            self.create(kai_scheduler.QUEUES_PATH, queue)

    def start_kueue(self) -> None:
        """Kueue's manager (:mod:`gangway_localcluster.kueue`), built once, its CRDs
        installed; ready once its readiness probe answers. Once: a second call finds it."""
        if self.kueue:
            return
        binary, crds = queueing.ensure_kueue(log=True)
        self.install_crds(crds)
        self.crds = tuple(dict.fromkeys((*self.crds, *crds)))
        queueing.ensure_metrics_certificate()
        health, metrics, webhook = (processes.free_port() for _ in range(3))
        config = queueing.write_configuration(self.workdir, health, metrics, webhook)
        self._serve(
            queueing.BINARY,
            [binary, f"--config={config}"],
            f"http://127.0.0.1:{health}/readyz",
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
        )
        self.kueue = True

    def _start_second_scheduler(
        self, second: SecondScheduler, scheduler_name: str, binary: Path
    ) -> None:
        """``second`` with one profile, ``scheduler_name``; ready once its ready path
        answers."""
        profile = {"schedulerName": scheduler_name, "plugins": dict(second.plugins)}
        config = self._scheduler_config(binary.name, profile)
        port = processes.free_port()
        self._serve(
            binary.name,
            [
                binary,
                f"--config={config}",
                f"--authentication-kubeconfig={self.kubeconfig}",
                f"--authorization-kubeconfig={self.kubeconfig}",
                "--authentication-skip-lookup=true",
                "--bind-address=127.0.0.1",
                f"--secure-port={port}",
                *second.extra_args,
                "-v=1",
            ],
            f"https://127.0.0.1:{port}{second.ready_path}",
            context=_unverified(),
        )

    def _start_volcano(self, scheduler_name: str, binary: Path) -> None:
        """vc-scheduler with Volcano's shipped configuration, serving ``scheduler_name``;
        ready once its health endpoint answers (it creates the default queue first)."""
        conf = self.workdir / "vc-scheduler.conf"
        conf.write_text(yaml.safe_dump(vc.SCHEDULER_CONF, sort_keys=False))
        healthz, metrics = processes.free_port(), processes.free_port()
        self._serve(
            vc.BINARY,
            vc.scheduler_args(
                binary,
                kubeconfig=self.kubeconfig,
                conf=conf,
                scheduler_name=scheduler_name,
                healthz=healthz,
                metrics=metrics,
            ),
            f"http://127.0.0.1:{healthz}/healthz",
            # Its GPU-sharing plugin reads a kubeconfig from $KUBECONFIG at start (or logs an
            # error) even when no profile enables it.
            env={**os.environ, "KUBECONFIG": str(self.kubeconfig)},
        )

    def _serve(
        self,
        name: str,
        args: Sequence[str | Path],
        ready_url: str,
        *,
        context: ssl.SSLContext | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        """Start a scheduler-like child (log capped: they retry what they cannot place, and
        log each try) and wait until ``ready_url`` answers."""
        child = processes.start(
            name,
            args,
            self.workdir / "logs" / f"{name}.log",
            env=env,
            max_log_bytes=SCHEDULER_LOG_BYTES,
        )
        self._children.append(child)
        processes.wait_until(partial(processes.http_ok, ready_url, context), child, ready_url, 60)

    def start_dns(self) -> int:
        """CoreDNS for the cluster's names (:mod:`gangway_localcluster.coredns`), on a free
        loopback port it returns once CoreDNS has listed Services and endpoints."""
        binary = coredns.ensure_coredns(log=True)
        port, ready = processes.free_port(), processes.free_port()
        conf = self.workdir / "Corefile"
        conf.write_text(coredns.corefile(self.kubeconfig, port, ready))
        self._serve(
            "coredns",
            [binary, "-conf", conf, "-dns.port", str(port)],
            f"http://127.0.0.1:{ready}/ready",
        )
        return port

    @property
    def scheduling(self) -> bool:
        return any(c.name == "kube-scheduler" for c in self._children)

    def add_nodes(self, pool: NodePool, ready_within: float = 60.0) -> list[str]:
        """Create the pool's nodes (those that exist are kept) and wait until kwok reports
        every one Ready. Returns their names."""
        if not self.scheduling:
            raise RuntimeError("nodes need the scheduler and kwok: start(scheduling=True)")
        for node in pool.manifests():
            self.create("/api/v1/nodes", node)
        names = pool.names()
        deadline = time.monotonic() + ready_within
        while not_ready := [n for n in names if not self._node_ready(n)]:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nodes not Ready after {ready_within:.0f}s: {not_ready[:5]}")
            time.sleep(0.1)
        return names

    def delete_nodes(self, names: Iterable[str]) -> None:
        for name in names:
            try:
                self.request("DELETE", f"/api/v1/nodes/{name}")
            except APIError as exc:
                if exc.status != 404:
                    raise

    def _node_ready(self, name: str) -> bool:
        _, node = self.request("GET", f"/api/v1/nodes/{name}")
        return is_ready(node)

    # --- access -------------------------------------------------------------------------

    def _kubeconfig_text(self, pair: KeyPair, user: str) -> str:
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        return yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "gangway-local",
                        "cluster": {
                            "server": self.server,
                            "certificate-authority-data": b64(self._ca_pem),
                        },
                    }
                ],
                "users": [
                    {
                        "name": user,
                        "user": {
                            "client-certificate-data": b64(pair.cert_pem),
                            "client-key-data": b64(pair.key_pem),
                        },
                    }
                ],
                "contexts": [
                    {"name": "gangway-local", "context": {"cluster": "gangway-local", "user": user}}
                ],
                "current-context": "gangway-local",
            },
            sort_keys=False,
        )

    def user_kubeconfig(self, user: str, groups: Iterable[str] = ()) -> Path:
        """A kubeconfig for another identity (RBAC tests): a client cert, CN user, O groups."""
        pair = self._client_ca.issue(user, orgs=tuple(groups))
        path = self.workdir / f"kubeconfig-{user.replace(':', '_')}"
        path.write_text(self._kubeconfig_text(pair, user))
        path.chmod(0o600)
        return path

    @cached_property
    def _ssl_context(self) -> ssl.SSLContext:
        """The admin's TLS context, built once: readiness polls reuse it every 100 ms."""
        context = ssl.create_default_context(cadata=self._ca_pem.decode())
        cert, key = self._admin.write(self.workdir / "pki", "admin")
        context.load_cert_chain(cert, key)
        return context

    def _ready(self) -> bool:
        try:
            status, _ = self.request("GET", "/readyz")
        except (OSError, ssl.SSLError, APIError):
            return False
        return status == 200

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """One admin request; JSON (or text) back; raises APIError for 4xx/5xx."""
        host, port = self.server.removeprefix("https://").split(":")
        conn = http.client.HTTPSConnection(host, int(port), context=self._ssl_context, timeout=30)
        try:
            payload = (
                None
                if body is None
                else (body if isinstance(body, (bytes, str)) else json.dumps(body))
            )
            conn.request(method, path, body=payload, headers={"Content-Type": content_type})
            response = conn.getresponse()
            raw = response.read()
        finally:
            conn.close()
        try:
            data: Any = json.loads(raw) if raw else None
        except ValueError:
            data = raw.decode(errors="replace")
        if response.status >= 400:
            raise APIError(response.status, data)
        return response.status, data

    def create(self, path: str, body: dict[str, Any]) -> bool:
        """POST ``body`` to ``path``; False if it exists already (kept as it is)."""
        try:
            self.request("POST", path, body)
        except APIError as exc:
            if exc.status != 409:
                raise
            return False
        return True

    # --- CRDs ---------------------------------------------------------------------------

    def install_crds(self, paths: Iterable[Path], timeout: float = 60.0) -> list[str]:
        """Server-side apply every CRD in the files, then wait until each is Established."""
        names = []
        for path in paths:
            for doc in yaml.safe_load_all(path.read_text()):
                if not doc or doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                # Server-side apply: Grove's large CRDs exceed client-side apply's annotation.
                self.request(
                    "PATCH",
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                    f"{name}?fieldManager={FIELD_MANAGER}&force=true",
                    json.dumps(doc),
                    content_type="application/apply-patch+yaml",
                )
                names.append(name)
        deadline = time.monotonic() + timeout
        pending = set(names)
        while pending:
            for name in sorted(pending):
                _, crd = self.request(
                    "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
                )
                # A just-created CRD may report `conditions: null` before the controller fills it.
                conditions = (crd.get("status") or {}).get("conditions") or []
                if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                    pending.discard(name)
            if pending and time.monotonic() > deadline:
                raise TimeoutError(f"CRDs not established after {timeout:.0f}s: {sorted(pending)}")
            if pending:
                time.sleep(0.1)
        return names


@dataclass(frozen=True)
class CappedQueue:
    """A scheduler's queue with a cap: the objects that make it, each with the collection it
    is created in (parents first), and the labels that put a PodCliqueSet in it."""

    objects: list[tuple[str, dict[str, Any]]]
    labels: dict[str, str]


@dataclass(frozen=True)
class LocalScheduler:
    """A scheduler the local cluster runs beside kube-scheduler, for one built-in backend."""

    # The built-in backend whose gangs it places, by its name in the table (a library here
    # may not import a service: the name is data).
    backend: str
    scheduler_name: str  # the schedulerName it serves unless the profile names another
    title: str  # what `gangway up` calls what runs
    module: WrappedModule  # what it is built from (``built()``: in the cache already)
    build: Callable[[], Any]  # builds (once, cached) what it runs: a handle for crds and start
    crds: Callable[[Any], tuple[Path, ...]]  # its CRDs, from the same module download
    start: Callable[[ControlPlane, str, Any], None]  # its processes, serving a schedulerName
    note: str = ""  # what else `gangway up` says of it (a queue it made for the demo)
    # A queue of its scheduler holding ``gpus`` GPUs at most, for a conformance scenario
    # (None: it has no queues).
    capped_queue: Callable[[str, int], CappedQueue] | None = None

    def start_on(self, cp: ControlPlane, name: str) -> None:
        """Built (once), its CRDs installed, started on a running control plane."""
        handle = self.build()
        crds = self.crds(handle)
        cp.install_crds(crds)
        cp.crds = tuple(dict.fromkeys((*cp.crds, *crds)))
        self.start(cp, name, handle)
        cp.schedulers[self.backend] = name


def _second(second: SecondScheduler) -> dict[str, Any]:
    """What a kube-scheduler build of another project needs: its binary, its CRDs, its
    profile under the given name."""
    return {
        "module": second.module,
        "build": partial(second.build, log=True),
        "crds": lambda binary: tuple(second.module.crds()),
        "start": lambda cp, name, binary: cp._start_second_scheduler(second, name, binary),
    }


LOCAL_SCHEDULERS: Final[dict[str, LocalScheduler]] = {
    local.backend: local
    for local in (
        LocalScheduler(
            backend="kai-scheduler",
            scheduler_name=kai_scheduler.SCHEDULER_NAME,
            title=f"kai-scheduler and kai-binder (KAI v{kai_scheduler.KAI_VERSION})",
            module=kai_scheduler.KAI,
            build=partial(kai_scheduler.ensure_kai, log=True),
            crds=lambda kai: tuple(kai.crds),
            start=lambda cp, name, kai: cp._start_kai(kai),
            note=(
                f"KAI queue {kai_scheduler.DEFAULT_QUEUE} (under "
                f"{kai_scheduler.DEFAULT_PARENT_QUEUE}) for the demo"
            ),
            capped_queue=lambda name, gpus: CappedQueue(
                [
                    (kai_scheduler.QUEUES_PATH, queue)
                    for queue in kai_scheduler.queues(name, f"{name}-department", gpus)
                ],
                {kai_scheduler.QUEUE_LABEL: name},
            ),
        ),
        LocalScheduler(
            backend="coscheduling",
            scheduler_name=scheduler_plugins.SCHEDULER_NAME,
            title=(
                f"scheduler-plugins v{scheduler_plugins.SCHEDULER_PLUGINS_VERSION} "
                "with Coscheduling"
            ),
            **_second(scheduler_plugins.SCHEDULER),
        ),
        LocalScheduler(
            backend="koordinator",
            scheduler_name=koord.SCHEDULER_NAME,
            title=f"Koordinator v{koord.KOORDINATOR_VERSION}'s koord-scheduler",
            **_second(koord.SCHEDULER),
        ),
        LocalScheduler(
            backend="volcano",
            scheduler_name=vc.SCHEDULER_NAME,
            title=f"Volcano v{vc.VOLCANO_VERSION}'s vc-scheduler",
            module=vc.VOLCANO,
            build=lambda: vc.VOLCANO.build(log=True) / vc.BINARY,
            crds=lambda binary: tuple(vc.VOLCANO.crds()),
            start=lambda cp, name, binary: cp._start_volcano(name, binary),
            note=f"Volcano queue {vc.DEFAULT_QUEUE}",
            capped_queue=lambda name, gpus: CappedQueue(
                [(vc.QUEUES_PATH, vc.capped_queue(name, gpus))], {vc.QUEUE_KEY: name}
            ),
        ),
    )
}
