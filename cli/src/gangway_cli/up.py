"""``gangway up``: Gangway's main job on this machine.

Starts a real local control plane (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler, and kwok with a few fake GPU nodes) with Gangway's CRDs; KAI's scheduler and
binder, KAI's CRDs and its default queues too, unless the operator configuration leaves the
kai-scheduler profile out; scheduler-plugins' Coscheduling scheduler, Koordinator's
koord-scheduler and Volcano's vc-scheduler with their CRDs, each under its profile's
schedulerName, unless the configuration leaves that profile out; nats-server with JetStream,
and every Gangway service as a separate process (``services.py``); prints where everything
is; Ctrl-C stops all of it and removes what it created. With ``--kubeconfig`` the cluster is
an existing one: only NATS and the services start here (``cluster.py`` says what is asked of
it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import ipaddress
import os
import shlex
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any, Final

import yaml

from gangway_admission.webhook import PATH
from gangway_cli import cluster, rehearsal
from gangway_cli.inputs import config_file, scheduler_section
from gangway_cli.latecomers import LateSchedulers
from gangway_cli.localbus import LocalBus
from gangway_cli.services import LocalServices, services_for
from gangway_contracts import kueue
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.config import (
    DEFAULT_SCHEDULER,
    SchedulerConfig,
    load_operator_config,
)
from gangway_contracts.errors import FieldErrors
from gangway_localcluster import kueue as queueing
from gangway_localcluster.build import KUBERNETES_VERSION, Binaries, ensure_binaries
from gangway_localcluster.certs import ServingFiles, write_serving_certificate
from gangway_localcluster.controlplane import (
    LOCAL_SCHEDULERS,
    APIError,
    ControlPlane,
    feature_gates,
)
from gangway_localcluster.coredns import COREDNS_VERSION
from gangway_localcluster.crds import crd_files, gangway_crds
from gangway_localcluster.nodes import NodePool
from gangway_localcluster.processes import free_port
from gangway_localcluster.realnode import RealNode
from gangway_runtime.kube import KubeError
from gangway_runtime.settings import ConsumerSettings, load_settings

REPO: Final = Path(__file__).resolve().parents[3]
REGISTRATION: Final = REPO / "deploy" / "base" / "validating-webhook.yaml"
# A few 8-GPU nodes in racks of four: room for the demo, and something to pack into.
DEFAULT_NODES: Final = NodePool(count=4)


def add_arguments(up: argparse.ArgumentParser) -> None:
    up.add_argument(
        "--kubeconfig",
        type=Path,
        default=None,
        help="run against this existing cluster (its current context) instead of a local "
        "control plane: only NATS and the services start here; Gangway's CRDs are installed "
        "if missing",
    )
    up.add_argument(
        "--webhook-host",
        default=None,
        help="with --kubeconfig: the address of this machine the cluster's API server can "
        "reach; admission is registered there (default: not registered)",
    )
    up.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="keep kubeconfig, logs and data here (default: a temp dir, removed)",
    )
    up.add_argument(
        "--config",
        type=config_file,
        default=None,
        help="operator configuration (scheduler profiles); default: default-scheduler, with "
        "gang scheduling where the Workload API is served, plus every other backend whose "
        "scheduler's resources are served (KAI, Coscheduling, Koordinator, Volcano)",
    )
    nodes = up.add_argument_group("local nodes (kwok; without --kubeconfig)")
    nodes.add_argument(
        "--nodes",
        type=_at_least(0),
        default=None,
        help=f"how many (default {DEFAULT_NODES.count}; 0: none)",
    )
    nodes.add_argument(
        "--node-gpus", type=_at_least(0), default=DEFAULT_NODES.gpus, help="nvidia.com/gpu each"
    )
    nodes.add_argument("--node-cpu", default=DEFAULT_NODES.cpu, help="CPU each")
    nodes.add_argument("--node-memory", default=DEFAULT_NODES.memory, help="memory each")
    up.add_argument(
        "--node",
        action="store_true",
        help="one real node too (containerd, the kubelet; needs root), to rehearse Gangway's "
        "Helm chart on: Gangway itself does not start here, up prints the helm command that "
        "installs it on the node with the image built from this checkout",
    )
    up.add_argument(
        "--nats-tls",
        action="store_true",
        help="NATS serves TLS only, with a CA made for this run (GANGWAY_NATS_CA names it)",
    )
    up.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        help="write the environment here once everything is up (for scripts)",
    )
    up.set_defaults(run=run)


def _at_least(low: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < low:
            raise argparse.ArgumentTypeError(f"must be >= {low}")
        return value

    return parse


def node_pool(args: argparse.Namespace) -> NodePool:
    return NodePool(
        count=DEFAULT_NODES.count if args.nodes is None else args.nodes,
        gpus=args.node_gpus,
        cpu=args.node_cpu,
        memory=args.node_memory,
    )


def _misuse(args: argparse.Namespace) -> str | None:
    """What is wrong with the flags, before anything starts."""
    if args.webhook_host and args.kubeconfig is None:
        return "--webhook-host goes with --kubeconfig"
    if args.kubeconfig is not None and args.nodes is not None:
        return "--nodes is for the local cluster; not with --kubeconfig"
    if args.node and args.kubeconfig is not None:
        return "--node joins a real node to the local cluster; not with --kubeconfig"
    if args.node and (args.nats_tls or args.webhook_host):
        return "--node starts no Gangway of its own: the chart's runs on the node"
    return None


SAY = partial(print, flush=True)


def run(args: argparse.Namespace) -> int:
    """The cluster (local, or the one given), then NATS and the services on it, until Ctrl-C;
    everything started is stopped in reverse on the way out."""
    given, problem = _given_config(args)
    if problem:
        print(f"up: {problem}", file=sys.stderr)
        return 2
    with ExitStack() as stack:
        state = args.state_dir or Path(stack.enter_context(TemporaryDirectory(prefix="gangway-")))
        state.mkdir(parents=True, exist_ok=True)
        try:
            local = (
                None
                if args.kubeconfig
                else local_cluster(
                    state,
                    args.state_dir,
                    stack,
                    SAY,
                    nodes=node_pool(args),
                    given=given,
                    real_node=args.node,
                )
            )
        except APIError as exc:  # the API server refused a node as described by the flags
            print(f"up: the local nodes (--node-cpu, --node-memory): {exc}", file=sys.stderr)
            return 2
        except (RuntimeError, TimeoutError) as exc:  # a build, or a server that did not start
            print(f"up: the local cluster did not start: {exc}", file=sys.stderr)
            return 1
        if local is not None and local.node is not None:
            return _rehearse(args, local, local.node, state)
        kubeconfig = local.cp.kubeconfig if local else args.kubeconfig.resolve()
        try:
            found = asyncio.run(cluster.prepare(kubeconfig, gangway_crds()))
        except (cluster.ClusterInUse, KubeError, OSError) as exc:
            print(f"up: the cluster of {kubeconfig}: {exc}", file=sys.stderr)
            return 1
        running = start_gangway(
            stack,
            state=state,
            local=local,
            kubeconfig=kubeconfig,
            found=found,
            given=given,
            config=args.config,
            nats_tls=args.nats_tls,
            webhook_host=args.webhook_host,
        )
        env = running.environment()
        for line in running.summary(running.config, env):
            SAY(line)
        SAY("Ctrl-C stops everything.")
        return _until_interrupted(args, env, local)


def _rehearse(args: argparse.Namespace, local: LocalCluster, node: RealNode, state: Path) -> int:
    """The cluster with its real node, ready for the chart, until Ctrl-C (``rehearsal``)."""
    values = rehearsal.prepare(node, state)
    env = rehearsal.environment(node)
    SAY(f"Local control plane, Kubernetes v{KUBERNETES_VERSION} at {node.control_plane.server}")
    for line in local.described():
        SAY(line)
    SAY(f"  kubeconfig: {env['KUBECONFIG']}")
    for line in rehearsal.next_steps(node, values):
        SAY(line)
    SAY("Ctrl-C stops everything, the node and what runs on it.")
    return _until_interrupted(args, env, local)


def _until_interrupted(
    args: argparse.Namespace, env: dict[str, str], local: LocalCluster | None
) -> int:
    """Ready: the environment in --ready-file, the schedulers still missing built from now
    on; then wait for Ctrl-C (the caller's stack stops everything)."""
    if args.ready_file:
        # Whole or not at all: whoever waits for the file reads it as soon as it exists.
        unfinished = args.ready_file.with_name(args.ready_file.name + ".partial")
        unfinished.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        os.replace(unfinished, args.ready_file)
    if local and local.late:
        local.late.start()
    _wait_for_interrupt()
    # A second Ctrl-C must not cut the clean-up short and leave processes behind.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    SAY("stopping…")
    return 0


def _given_config(args: argparse.Namespace) -> tuple[SchedulerConfig | None, str | None]:
    """The --config given (None: up chooses one from what the cluster serves), or what is
    wrong with the command line."""
    problem = _misuse(args)
    if args.config is None or problem is not None:
        return None, problem
    try:
        return load_operator_config(args.config.read_text()), None
    except (OSError, FieldErrors) as exc:
        return None, f"--config {args.config}: {exc}"


def start_gangway(
    stack: ExitStack,
    *,
    state: Path,
    local: LocalCluster | None,
    kubeconfig: Path,
    found: cluster.Found,
    given: SchedulerConfig | None,
    config: Path | None,
    nats_tls: bool = False,
    webhook_host: str | None = None,
) -> Running:
    """NATS with a user per service, the services as processes, the webhook registered;
    each stopped by ``stack``. ``config``: the operator configuration's file (``given``
    as read), else one made from what the cluster serves."""
    config_file = _config_file(config, found, state)
    resolved = given if given is not None else load_operator_config(config_file.read_text())
    # JetStream on file in up's working directory (a temporary one unless --state-dir):
    # a nats-server restart loses nothing; a user per service, as deploy/ runs it.
    nats = LocalBus.start(state / "nats", resolved, load_settings(ConsumerSettings), tls=nats_tls)
    stack.callback(nats.stop)
    webhook_host = "127.0.0.1" if local else webhook_host
    webhook = LocalWebhook.make(state / "admission", webhook_host or "127.0.0.1")
    started = services_for(resolved)
    services = LocalServices.start(
        state / "logs",
        {
            "GANGWAY_NATS_URL": nats.url,
            "GANGWAY_KUBECONFIG": str(kubeconfig),
            "GANGWAY_CONFIG_FILE": str(config_file),
        },
        started,
        # Every user's, an external backend's too: ``gangway conformance`` runs one.
        {user: nats.settings_of(user) for user in nats.passwords}
        | {"admission": nats.settings_of("admission") | webhook.settings},
    )
    stack.callback(services.stop)
    if webhook_host:
        asyncio.run(cluster.register(kubeconfig, webhook.registration()))
        stack.callback(_deregister, kubeconfig)
    return Running(
        local=local,
        found=found,
        nats_url=nats.url,
        config_file=config_file,
        services=services,
        webhook=webhook,
        webhook_host=webhook_host,
        config=resolved,
        kubeconfig=kubeconfig,
        nats_ca=nats.ca,
    )


@dataclass(frozen=True)
class LocalCluster:
    binaries: Binaries
    cp: ControlPlane
    nodes: NodePool
    dns_port: int  # CoreDNS for cluster.local, on 127.0.0.1
    node: RealNode | None = None  # --node: the real node the chart is rehearsed on
    late: LateSchedulers | None = None  # the schedulers still being built, started after

    def described(self) -> Iterator[str]:
        """Its schedulers and nodes, a line each."""
        nodes = self.nodes
        yield f"  feature gates: {feature_gates(self.cp.binaries.minor)}"
        yield (
            f"  kube-scheduler, and kwok with {nodes.count} fake nodes "
            f"({nodes.cpu} CPU, {nodes.memory}, {nodes.gpus} nvidia.com/gpu each; "
            f"racks of {nodes.hosts_per_rack})"
        )
        for backend, name in self.cp.schedulers.items():
            local = LOCAL_SCHEDULERS[backend]
            yield f"  {local.title}, as {name}" + (f"; {local.note}" if local.note else "")
        if self.cp.kueue:
            yield (
                f"  Kueue v{queueing.KUEUE_VERSION}: ClusterQueue {queueing.DEMO_QUEUE} "
                f"({queueing.DEMO_GPUS} nvidia.com/gpu) for the demo; a PodCliqueSet labelled "
                f"{kueue.QUEUE_LABEL}=<LocalQueue> is admitted by Kueue before its gates lift"
            )
        for backend in self.building():
            yield (
                f"  {LOCAL_SCHEDULERS[backend].title}: being built (first run only), started "
                "as soon as it is; its PodCliqueSets wait for it"
            )

    def building(self) -> list[str]:
        return self.late.pending() if self.late else []


def local_cluster(
    state: Path,
    keep: Path | None,
    stack: ExitStack,
    say: Callable[[str], None],
    *,
    nodes: NodePool,
    given: SchedulerConfig | None,
    real_node: bool = False,
) -> LocalCluster:
    # Every local scheduler runs here unless a configuration leaves its backend's profile out
    # (the default enables them all), serving the schedulerName its profile names.
    schedulers = {
        local.backend: name
        for local in LOCAL_SCHEDULERS.values()
        if (name := _scheduler_name(given, local.backend, local.scheduler_name))
    }
    # A first run starts without the schedulers not built yet: they are built while the
    # cluster runs, each started once built (``latecomers``); their CRDs are installed now.
    built = {b: n for b, n in schedulers.items() if LOCAL_SCHEDULERS[b].module.built()}
    waiting = {b: n for b, n in schedulers.items() if b not in built}
    crds = [*crd_files(), *(crd for b in waiting for crd in LOCAL_SCHEDULERS[b].module.crds())]
    say("building or reusing the control-plane binaries…")
    binaries = ensure_binaries(log=True)
    node = None
    if real_node:
        if cannot := rehearsal.why_not():
            raise RuntimeError(cannot)
        say("building or reusing the real node's binaries, packages and images…")
        node = RealNode.start(crds=crds, schedulers=built)
        stack.callback(node.stop)
        cp = node.control_plane
    else:
        cp = ControlPlane.start(
            binaries,
            workdir=state / "cluster" if keep else None,
            crds=crds,
            scheduling=True,
            schedulers=built,
        )
        stack.callback(cp.stop)
    if nodes.count:
        cp.add_nodes(nodes)
    if given is None or given.kueue:  # Kueue in front of every scheduler, with the demo's quota
        say("building or reusing Kueue…")
        cp.start_kueue()
        for collection, made in queueing.demo_flavor(given is not None and given.kueue_topology):
            cp.create(collection, made)
        cp.create(queueing.CLUSTER_QUEUES, queueing.demo_cluster_queue())
    # Pods' names (<podclique>-<i>.<pcs>-<r>.<ns>.svc.cluster.local) answered as a
    # cluster's DNS answers them.
    dns_port = cp.start_dns()
    late = LateSchedulers(cp, waiting, say)
    stack.callback(late.stop)  # before the control plane stops
    return LocalCluster(binaries, cp, nodes, dns_port, node, late)


def _scheduler_name(given: SchedulerConfig | None, backend: str, default: str) -> str | None:
    """The schedulerName a local second scheduler serves for ``backend``: its profile's, or
    ``default`` without a configuration; None when a configuration leaves the profile out."""
    if given is None:
        return default
    profile = given.profiles.get(backend)
    return profile.scheduler_name if profile else None


def _deregister(kubeconfig: Path) -> None:
    try:
        asyncio.run(cluster.deregister(kubeconfig))
    except (KubeError, OSError) as exc:  # say so and go on stopping the rest
        print(f"up: could not remove the webhook registration: {exc}", file=sys.stderr)


@dataclass(frozen=True)
class Running:
    """Everything ``up`` started, for telling the user where it is."""

    local: LocalCluster | None
    found: cluster.Found
    nats_url: str
    config_file: Path
    services: LocalServices
    webhook: LocalWebhook
    webhook_host: str | None
    config: SchedulerConfig
    kubeconfig: Path
    nats_ca: Path | None

    def environment(self) -> dict[str, str]:
        """What a shell needs to use what runs: kubectl's and gangway trace's settings."""
        env = {"KUBECONFIG": str(self.kubeconfig), "NATS_URL": self.nats_url}
        if self.nats_ca is not None:  # gangway trace trusts the server by it
            env["GANGWAY_NATS_CA"] = str(self.nats_ca)
        if self.local:
            env["PATH"] = f"{self.local.binaries.kubectl.parent}:{os.environ.get('PATH', '')}"
            env["GANGWAY_DNS"] = f"127.0.0.1:{self.local.dns_port}"
        return env

    def summary(self, config: SchedulerConfig, env: dict[str, str]) -> Iterator[str]:
        found, logs = self.found, self.services.workdir
        workload_api = found.workload_api or "not served"
        if self.local:
            yield f"Local control plane, Kubernetes {found.version} at {found.server}"
            yield from self.local.described()
            yield (
                f"  CoreDNS v{COREDNS_VERSION} for cluster.local at {env['GANGWAY_DNS']}: "
                "pods' Grove names (<podclique>-<i>.<pcs>-<replica>.<namespace>.svc.cluster.local)"
            )
        else:
            yield f"Existing cluster, Kubernetes {found.version} at {found.server}"
        yield f"  kubeconfig: {env['KUBECONFIG']}"
        served = {True: "served", False: "not served"}
        others = [n for n in builtin_backends() if n != DEFAULT_SCHEDULER]
        whole = (
            f", CompositePodGroup {found.composite}: a PodGang of podgroups placed whole"
            if found.composite
            else ", no CompositePodGroup: each podgroup placed whole, a PodGang not"
            if found.workload_api
            else ""
        )
        yield f"  Workload API (scheduling.k8s.io): {workload_api}{whole}; " + "; ".join(
            f"{name}'s resources: {served[name in found.served]}" for name in others
        )
        if self.local:
            crds = self.local.cp.crds
            yield f"  CRDs: {len(crds)} installed ({', '.join(p.stem for p in crds)})"
        else:
            yield "  Gangway CRDs installed: " + (", ".join(found.installed) or "none needed")
        yield (
            f"NATS with JetStream at {self.nats_url}: a user per service; without credentials,"
            " a client reads and changes nothing"
        )
        yield f"Scheduler profiles ({self.config_file}): {', '.join(config.enabled)}"
        yield f"  default: {config.default}"
        yield "Services:"
        for name, port in self.services.ports.items():
            yield f"  {name}: http://127.0.0.1:{port}/metrics, log {logs / name}.log"
        if self.webhook_host:
            yield f"  admission webhook: {self.webhook.url} (registered as {cluster.WEBHOOK_NAME})"
        else:
            yield (
                f"  admission webhook: {self.webhook.url}, not registered: the cluster's API "
                "server cannot call this machine's loopback (--webhook-host HOST registers it)"
            )
        yield from self._next_steps(env)

    def _next_steps(self, env: dict[str, str]) -> Iterator[str]:
        """What to try next, in another shell: the environment to set, then commands."""
        yield "Try, in another shell:"
        for key in ("KUBECONFIG", "NATS_URL", "GANGWAY_NATS_CA"):
            if key in env:
                yield f"  export {key}={shlex.quote(env[key])}"
        # gangway itself (the workspace's environment) and the kubectl this cluster runs.
        found = [Path(sys.executable).parent]
        if self.local:
            found.insert(0, self.local.binaries.kubectl.parent)
        yield f"  export PATH={':'.join(shlex.quote(str(p)) for p in found)}:$PATH"
        building = self.local.building() if self.local else []
        yield "  gangway demo   # sample PodCliqueSets, one per backend, with progress" + (
            " (once up says every scheduler runs)" if building else ""
        )
        yield "  gangway trace gangway-demo/demo-serving   # its timeline and trace id"
        yield "  gangway why gangway-demo/demo-serving     # each gang: scheduled? if not, why"
        yield "  kubectl get nodes -L gangway.dev/rack"
        if self.local:
            yield (
                f"  dig @127.0.0.1 -p {self.local.dns_port} +short "
                "demo-serving-0-prefill-1-pleader-0.demo-serving-0.gangway-demo.svc.cluster.local"
                "   # a prefill leader by its Grove name"
            )
        yield "  kubectl get podgangs,pods -n gangway-demo -o wide"
        yield "  kubectl get pclq,pcsg -n gangway-demo -o wide   # Grove's PodCliques, counted"
        scaletest = (
            "  kubectl apply --server-side -f tests/fixtures/podcliquesets/scaletest-1000.yaml"
        )
        nodes = self.local.nodes if self.local else None
        if nodes is not None and nodes.count * nodes.max_pods < SCALETEST_PODS:
            fits = -(-SCALETEST_PODS // nodes.max_pods)
            room = nodes.count * nodes.max_pods
            scaletest += (
                f"   # {SCALETEST_PODS} pods: {nodes.count} nodes hold {room}"
                f" (start up with --nodes {fits} to run them all)"
            )
        yield scaletest
        yield (
            "  kubectl apply --server-side -f tests/fixtures/podcliquesets/single-clique.yaml"
            "   # refused by admission: why?"
        )
        yield "  gangway validate tests/fixtures/podcliquesets/single-clique.yaml   # offline"


# What tests/fixtures/podcliquesets/scaletest-1000.yaml makes (Grove's ScaleTest_1000).
SCALETEST_PODS: Final = 1000


@dataclass(frozen=True)
class LocalWebhook:
    """The admission service on this machine with a certificate of its own for ``host``,
    registered by URL (in a cluster it is a Service; see deploy/base/admission.yaml)."""

    host: str
    port: int
    files: ServingFiles

    @classmethod
    def make(cls, directory: Path, host: str) -> LocalWebhook:
        return cls(host, free_port(), write_serving_certificate(directory, (host,)))

    @property
    def url(self) -> str:
        return f"https://{_url_host(self.host)}:{self.port}{PATH}"

    @property
    def settings(self) -> dict[str, str]:
        # Any interface unless the API server is on this machine: it calls in from elsewhere.
        bind = "127.0.0.1" if _loopback(self.host) else "0.0.0.0"
        return {
            "GANGWAY_WEBHOOK_HOST": bind,
            "GANGWAY_WEBHOOK_PORT": str(self.port),
            "GANGWAY_TLS_CERT_FILE": str(self.files.cert),
            "GANGWAY_TLS_KEY_FILE": str(self.files.key),
        }

    def registration(self) -> dict[str, Any]:
        return registration_by_url(cluster.WEBHOOK_NAME, self.url, self.files.ca.read_bytes())


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _url_host(host: str) -> str:
    try:
        return f"[{host}]" if ipaddress.ip_address(host).version == 6 else host
    except ValueError:
        return host


def registration_by_url(
    name: str, url: str, ca_bundle: bytes, namespace_selector: dict[str, Any] | None = None
) -> dict[str, Any]:
    """deploy/'s ValidatingWebhookConfiguration, the same rules, sent to ``url`` and trusting
    ``ca_bundle`` instead of the in-cluster Service; ``namespace_selector`` replaces which
    namespaces it judges (tests sharing one API server take one namespace each)."""
    webhook: dict[str, Any] = yaml.safe_load(REGISTRATION.read_text())
    webhook["metadata"] = {"name": name}
    for hook in webhook["webhooks"]:
        hook["clientConfig"] = {"url": url, "caBundle": base64.b64encode(ca_bundle).decode()}
        if namespace_selector is not None:
            hook["namespaceSelector"] = namespace_selector
    return webhook


def default_config(found: cluster.Found) -> dict[str, Any]:
    """The embedded operator configuration, from what the cluster serves: gang scheduling
    needs the Workload API; another backend is enabled where its scheduler's resources are
    served (its backend cannot start without them); Kueue in front of them where its
    Workloads are served."""
    gang = found.workload_api is not None
    config: dict[str, Any] = {"scheduler": scheduler_section(found.served, gang_scheduling=gang)}
    if found.kueue:
        config["kueue"] = {"enabled": True}
    return config


def _config_file(given: Path | None, found: cluster.Found, workdir: Path) -> Path:
    """The operator configuration the services read: the one given, else the default."""
    if given is not None:
        return given.resolve()
    path = workdir / "operator-config.yaml"
    path.write_text(yaml.safe_dump(default_config(found), sort_keys=False))
    return path


def _wait_for_interrupt() -> None:
    """Until Ctrl-C or SIGTERM. SIGINT gets a handler of its own: a process started in the
    background by a non-interactive shell inherits SIGINT ignored, and would never stop."""
    stop = False

    def handler(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    while not stop:
        time.sleep(0.5)
