"""``gangway render --config CONFIG FILE``: what the backend would create, offline.

FILE holds a PodCliqueSet, or PodGangs (with their PodCliqueSet beside them when the backend
needs it, e.g. KAI's queue, or to render their pods). Output: a YAML stream of the backend's
objects for every PodGang, then the prepared pods, from the same pure functions the services
run. Checks that need the cluster are skipped and said on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path
from typing import Any, get_args

from gangway_backend_kube.translate import WORKLOAD_VERSIONS, WorkloadVersion
from gangway_backendkit.protocol import Backend, SyncFailed
from gangway_cli.backends import builtin_backend
from gangway_cli.inputs import OFFLINE_CONFIG_HELP, Manifests, config_file, read_offline_config
from gangway_cli.output import add_output_option, print_documents, print_errors
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError, FieldErrors
from gangway_contracts.grove import PodCliqueSet, PodGang, podcliqueset_of
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateRequest
from gangway_podgang.manifests import pod_manifest, podgang_manifest
from gangway_podgang.plan import PlannedGang


def add_arguments(render: argparse.ArgumentParser) -> None:
    render.add_argument("file", type=Path, help="a PodCliqueSet manifest, or PodGang manifests")
    render.add_argument("--config", type=config_file, help=OFFLINE_CONFIG_HELP)
    render.add_argument(
        "--workload-api",
        choices=get_args(WorkloadVersion),
        default=WORKLOAD_VERSIONS[0],
        help="default-scheduler with gangScheduling: the Workload API version the cluster "
        "serves (v1beta1: Kubernetes 1.37, v1alpha2: 1.36, v1alpha1: 1.35)",
    )
    render.add_argument(
        "--backend",
        help="render with this backend (an enabled profile), whatever the PodGang's "
        "grove.io/scheduler-name label says: what another scheduler would make of a gang",
    )
    add_output_option(render)
    render.set_defaults(run=run)


class Renderer:
    def __init__(
        self, config: SchedulerConfig, workload_api: WorkloadVersion, backend: str | None = None
    ) -> None:
        self.config = config
        self.workload_api = workload_api
        self.chosen = backend
        self.objects: list[dict[str, Any]] = []
        self.pods: list[dict[str, Any]] = []
        self.notes: list[str] = []

    def backend(self, name: str) -> Backend:
        return builtin_backend(name, self.config, self.workload_api)

    def validate(self, pcs: PodCliqueSet) -> None:
        backend = self.backend(self.config.backend_for(pcs))
        request = ValidateRequest(operation="CREATE", podcliqueset=pcs)
        reply = asyncio.run(backend.validate_podcliqueset(request, None))
        self.notes += [f"note: {w}" for w in reply.warnings]
        self.notes += [f"warning: {u.field}: {u.message} ({u.feature})" for u in reply.unsupported]
        if not reply.allowed:
            raise FieldErrors(reply.errors)

    def gang(self, podgang: PodGang, pcs: PodCliqueSet | None, planned: PlannedGang | None) -> None:
        name = (
            self.chosen or podgang.metadata.labels.get(labels.SCHEDULER_NAME) or self.config.default
        )
        backend = self.backend(name)
        self.objects += backend.resources(podgang, pcs)
        if planned is None or pcs is None:
            return
        # A PodGang as written may hold fewer podgroups than today's plan: its pods only.
        groups = {g.name for g in podgang.spec.podgroups}
        pods = [
            pod_manifest(planned, group, index, pcs, podgang_uid=podgang.metadata.uid)
            for group, index, _ in planned.pods
            if group.name in groups
        ]
        reply = backend.prepare_pods(PreparePodsRequest(podgang=podgang, pods=pods))
        if not isinstance(reply, PodsPrepared):
            raise FieldErrors(reply.errors or [FieldError(field="", reason=reply.message)])
        self.pods += reply.pods


def _render(manifests: Manifests, renderer: Renderer) -> None:
    by_name = {(p.metadata.namespace, p.metadata.name): p for p in manifests.podcliquesets}
    if not manifests.podgangs:
        for pcs in manifests.podcliquesets:
            renderer.validate(pcs)
            backend = renderer.config.backend_for(pcs)
            plan = manifests.plan(pcs)
            renderer.notes += [f"warning: {u.field}: {u.reason}" for u in plan.unresolved_topology]
            for gang in plan.gangs:
                manifest = podgang_manifest(gang, pcs, backend, pod_references=True)
                renderer.gang(from_object(manifest, PodGang), pcs, gang)
        return
    for podgang, _ in manifests.podgangs:
        meta = podgang.metadata
        owner_name = podcliqueset_of(meta)
        owner = by_name.get((meta.namespace, owner_name))
        planned = None
        if owner is None:
            named = f"PodCliqueSet {owner_name}" if owner_name else "owning PodCliqueSet"
            renderer.notes.append(f"note: PodGang {meta.name}: no {named} in the file, so no pods")
        else:
            planned = {g.name: g for g in manifests.plan(owner).gangs}.get(meta.name)
        renderer.gang(podgang, owner, planned)


def run(args: argparse.Namespace) -> int:
    try:
        config = read_offline_config(args.config)
        manifests = Manifests.read(args.file)
        if not manifests.podcliquesets and not manifests.podgangs:
            return print_errors([f"{args.file}: no PodCliqueSet or PodGang in it"])
        chosen = config.resolve(args.backend) if args.backend else None
        if args.backend and chosen is None:
            enabled = ", ".join(config.enabled)
            return print_errors([f'--backend: "{args.backend}" is not enabled ({enabled} are)'])
        renderer = Renderer(config, args.workload_api, chosen)
        _render(manifests, renderer)
    except FieldErrors as exc:
        return print_errors(exc.errors)
    except SyncFailed as exc:
        return print_errors([f"{exc.reason}: {exc.message}"])
    print_documents(args.output, *renderer.objects, *renderer.pods)
    print_errors(renderer.notes)
    return 0
