"""``gangway up``: Gangway's main job on this machine.

Starts a real local control plane (etcd, kube-apiserver, kube-controller-manager) with
Gangway's CRDs and the scheduler CRDs it can find, nats-server with JetStream, and every
Gangway service that exists as a separate process (``services.py``); prints where
everything is; Ctrl-C stops all of it and removes what it created.
"""

from __future__ import annotations

import argparse
import base64
import os
import shlex
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_admission.webhook import PATH
from gangway_cli.services import LocalServices, services_for
from gangway_contracts.config import (
    DEFAULT_SCHEDULER,
    KAI_SCHEDULER,
    SchedulerConfig,
    load_operator_config,
)
from gangway_localcluster.build import Binaries, ensure_binaries
from gangway_localcluster.certs import ServingFiles, write_serving_certificate
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nats import NatsServer
from gangway_localcluster.processes import free_port

REPO: Final = Path(__file__).resolve().parents[3]
KAI_PODGROUP_CRD: Final = "scheduling.run.ai_podgroups.yaml"
GANGWAY_CRDS: Final = REPO / "deploy" / "crds"
REGISTRATION: Final = REPO / "deploy" / "base" / "validating-webhook.yaml"
# Scheduler CRDs (KAI, Volcano, …) are not Gangway's to ship: take them from a folder when
# one is given or sits beside the checkout (the upstream copies this workplace provides).
THIRD_PARTY_CRDS: Final = Path(
    os.environ.get("GANGWAY_THIRD_PARTY_CRDS", REPO.parent / "shared" / "crds")
)


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = subparsers.add_parser("up", help="run Gangway locally: control plane, NATS, services")
    up.add_argument(
        "--state-dir",
        type=Path,
        default=None,
        help="keep kubeconfig, logs and data here (default: a temp dir, removed)",
    )
    up.add_argument(
        "--config",
        type=Path,
        default=None,
        help="operator configuration (scheduler profiles); default: default-scheduler with "
        "gang scheduling, plus kai-scheduler when KAI's CRDs are installed",
    )
    up.add_argument(
        "--ready-file",
        type=Path,
        default=None,
        help="write the environment here once everything is up (for scripts)",
    )
    up.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    say = partial(print, flush=True)
    say("building or reusing the control-plane binaries…")
    binaries = ensure_binaries(log=True)
    state = args.state_dir
    if state is not None:
        state.mkdir(parents=True, exist_ok=True)
    nats = NatsServer.start(workdir=state / "nats" if state else None)
    try:
        crds = crd_files(GANGWAY_CRDS, THIRD_PARTY_CRDS)
        cp = ControlPlane.start(binaries, workdir=state / "cluster" if state else None, crds=crds)
    except BaseException:
        nats.stop()
        raise
    try:
        config_file = _config_file(args.config, crds, cp.workdir)
        config = load_operator_config(config_file.read_text())
        webhook = LocalWebhook.make(cp.workdir / "admission")
        services = LocalServices.start(
            cp.workdir / "logs",
            {
                "GANGWAY_NATS_URL": nats.url,
                "GANGWAY_KUBECONFIG": str(cp.kubeconfig),
                "GANGWAY_CONFIG_FILE": str(config_file),
                "GANGWAY_STREAMS__STORAGE": "memory" if state is None else "file",
            },
            services_for(config),
            {"admission": webhook.settings},
        )
        try:
            cp.request("POST", WEBHOOK_CONFIGURATIONS, webhook.registration())
        except BaseException:
            services.stop()
            raise
    except BaseException:
        cp.stop()
        nats.stop()
        raise
    try:
        env = {
            "KUBECONFIG": str(cp.kubeconfig),
            "NATS_URL": nats.url,
            "PATH": f"{binaries.kubectl.parent}:{os.environ.get('PATH', '')}",
        }
        running = Running(binaries, cp, crds, nats.url, config_file, services, webhook)
        for line in running.summary(config, env):
            say(line)
        say("Ctrl-C stops everything.")
        if args.ready_file:
            args.ready_file.write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        _wait_for_interrupt()
    finally:
        # A second Ctrl-C must not cut the clean-up short and leave processes behind.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        say("stopping…")
        services.stop()
        cp.stop()
        nats.stop()
    return 0


@dataclass(frozen=True)
class Running:
    """Everything ``up`` started, for telling the user where it is."""

    binaries: Binaries
    cp: ControlPlane
    crds: list[Path]
    nats_url: str
    config_file: Path
    services: LocalServices
    webhook: LocalWebhook

    def summary(self, config: SchedulerConfig, env: dict[str, str]) -> Iterator[str]:
        cp, logs = self.cp, self.cp.workdir / "logs"
        yield (
            f"Kubernetes v{self.binaries.version} at {cp.server} "
            f"(Workload API scheduling.k8s.io/{cp.workload_api_version})"
        )
        yield f"  kubeconfig: {cp.kubeconfig}"
        yield f"  CRDs: {len(self.crds)} installed ({', '.join(p.stem for p in self.crds)})"
        yield f"NATS with JetStream at {self.nats_url}"
        yield f"Scheduler profiles ({self.config_file}): {', '.join(config.enabled)}"
        yield f"  default: {config.default}"
        yield "Services:"
        for name, port in self.services.ports.items():
            yield f"  {name}: http://127.0.0.1:{port}/metrics, log {logs / name}.log"
        yield f"  admission webhook: {self.webhook.url} (registered as {WEBHOOK_NAME})"
        yield "Try, in another shell:"
        for key in ("KUBECONFIG", "NATS_URL"):
            yield f"  export {key}={shlex.quote(env[key])}"
        yield f"  export PATH={shlex.quote(str(self.binaries.kubectl.parent))}:$PATH"
        yield "  gangway demo   # sample PodCliqueSets, one per backend, with progress"
        yield "  gangway trace gangway-demo/demo-serving   # its timeline and trace id"
        yield "  kubectl get crds"
        yield "  kubectl create namespace ml"
        yield "  kubectl apply --server-side -f tests/fixtures/podcliquesets/scaletest-1000.yaml"
        yield (
            "  kubectl apply --server-side -f tests/fixtures/podcliquesets/single-clique.yaml"
            "   # refused by admission: why?"
        )
        yield "  gangway validate tests/fixtures/podcliquesets/single-clique.yaml   # offline"
        yield "  nats stream view GANGWAY_OBJECTS   # the watcher's mirror (nats CLI)"


WEBHOOK_CONFIGURATIONS: Final = (
    "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations"
)
WEBHOOK_NAME: Final = "gangway-admission"


@dataclass(frozen=True)
class LocalWebhook:
    """The admission service on loopback with a certificate of its own, registered by URL
    (in a cluster it is a Service; see deploy/base/admission.yaml)."""

    port: int
    files: ServingFiles

    @classmethod
    def make(cls, directory: Path) -> LocalWebhook:
        return cls(free_port(), write_serving_certificate(directory, ("127.0.0.1",)))

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}{PATH}"

    @property
    def settings(self) -> dict[str, str]:
        return {
            "GANGWAY_WEBHOOK_HOST": "127.0.0.1",
            "GANGWAY_WEBHOOK_PORT": str(self.port),
            "GANGWAY_TLS_CERT_FILE": str(self.files.cert),
            "GANGWAY_TLS_KEY_FILE": str(self.files.key),
        }

    def registration(self) -> dict[str, Any]:
        return registration_by_url(WEBHOOK_NAME, self.url, self.files.ca.read_bytes())


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


def _config_file(given: Path | None, crds: list[Path], workdir: Path) -> Path:
    """The operator configuration the services read: the one given, else the embedded
    default (KAI only when its PodGroup CRD is installed: its backend needs it to start)."""
    if given is not None:
        return given.resolve()
    profiles: list[dict[str, object]] = [
        {"name": DEFAULT_SCHEDULER, "default": True, "config": {"gangScheduling": True}}
    ]
    if any(p.name == KAI_PODGROUP_CRD for p in crds):
        profiles.append({"name": KAI_SCHEDULER})
    path = workdir / "operator-config.yaml"
    path.write_text(yaml.safe_dump({"scheduler": {"profiles": profiles}}, sort_keys=False))
    return path


def _wait_for_interrupt() -> None:
    stop = False

    def handler(signum: int, frame: object) -> None:
        nonlocal stop
        stop = True

    signal.signal(signal.SIGTERM, handler)
    try:
        while not stop:
            time.sleep(0.5)
    except KeyboardInterrupt:
        pass
