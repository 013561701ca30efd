"""Admission's question, answered: would the API server take the pods this PodCliqueSet
makes?

The webhook may not create pods (least privilege); podgang does that already. So podgang
makes one pod of each clique exactly as it would (``pod_manifest``), sends each with
``dryRun=All`` — the API server validates and admits it and stores nothing — and answers
with each refusal at the PodCliqueSet field it comes from
(``spec.containers[0].imagePullPolicy`` → ``spec.template.cliques[i].spec.podSpec.containers
[0].imagePullPolicy``). A refusal that depends on the moment (a full quota) is a warning,
not a reason to refuse the PodCliqueSet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import AsyncIterator, Awaitable
from typing import Any, Final

import msgspec
from nats.aio.client import Client as NatsClient
from nats.micro import add_service
from opentelemetry import trace

from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import DryRunPodsReply, DryRunPodsRequest
from gangway_contracts.subjects import PodgangOperation, Subjects
from gangway_podgang.manifests import pod_manifest
from gangway_podgang.plan import plan_podgangs
from gangway_runtime.kube import Kube, KubeError, StatusCause
from gangway_runtime.micro import SideBySide, endpoint
from gangway_runtime.status import PODS

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.podgang")

DRY_RUN: Final = (("dryRun", "All"),)
# Dry runs answered at once by one replica (each an API request or two).
DRY_RUNS_AT_ONCE: Final = 16
# The PodGang a sample pod would belong to does not exist yet: any uid will do, nothing is
# stored.
_NO_PODGANG: Final = "00000000-0000-0000-0000-000000000000"


def sample_pods(pcs: PodCliqueSet, startup_image: str) -> list[tuple[int, dict[str, Any]]]:
    """(clique index, the first pod podgang would make of that clique), for every clique
    that makes a pod at all: those of the first replica, planned alone (planning ten
    thousand replicas to sample one pod held podgang's loop, and admission's dry runs
    behind it timed out)."""
    index = {clique.name: i for i, clique in enumerate(pcs.spec.template.cliques)}
    found: dict[int, dict[str, Any]] = {}
    first = msgspec.structs.replace(
        pcs, spec=msgspec.structs.replace(pcs.spec, replicas=min(pcs.spec.replicas, 1))
    )
    for gang in plan_podgangs(first).gangs:
        for group in gang.podgroups:
            at = index[group.clique.name]
            if at not in found and group.pods:
                pod = pod_manifest(gang, group, 0, pcs, _NO_PODGANG, startup_image=startup_image)
                # An update's sample would be named as a pod that exists (409): a name of
                # its own, given by the server.
                pod["metadata"]["generateName"] = f"{pod['metadata'].pop('name')}-"
                found[at] = pod
    return sorted(found.items())


# A container's field; podgang appends an init container of its own (startup order) and
# puts Grove's variables first in each env (discovery.with_variables): the template's n-th
# variable is the pod's n+k-th.
_CONTAINER: Final = re.compile(r"^spec\.(containers|initContainers)\[(\d+)\]")
_VARIABLE: Final = re.compile(r"^\.env\[(\d+)\]")


def clique_field(
    clique: int, pod_field: str, pod: dict[str, Any], template: dict[str, Any]
) -> str | None:
    """The PodCliqueSet field a field of ``pod`` (made from the clique's podSpec
    ``template``) comes from; None for one podgang sets itself."""
    base = f"spec.template.cliques[{clique}]"
    if found := _CONTAINER.match(pod_field):
        kind, container, rest = found[1], int(found[2]), pod_field[found.end() :]
        theirs = template.get(kind) or []
        if container >= len(theirs):  # podgang's init container
            return None
        if variable := _VARIABLE.match(rest):
            try:
                name = pod["spec"][kind][container]["env"][int(variable[1])].get("name")
            except (KeyError, IndexError, TypeError, AttributeError):
                return None
            own = [v.get("name") for v in theirs[container].get("env") or []]
            if name not in own:  # one of Grove's variables
                return None
            rest = f".env[{own.index(name)}]{rest[variable.end() :]}"
        pod_field = f"spec.{kind}[{container}]{rest}"
    if pod_field.startswith("spec."):
        return f"{base}.spec.podSpec.{pod_field.removeprefix('spec.')}"
    for made_from in ("metadata.labels", "metadata.annotations"):
        if pod_field.startswith(made_from):
            return base + pod_field.removeprefix("metadata")
    return None


def _refusals(
    clique: int, error: KubeError, pod: dict[str, Any], template: dict[str, Any]
) -> list[FieldError]:
    base = f"spec.template.cliques[{clique}].spec.podSpec"
    if not error.causes:
        return [FieldError(field=base, reason=error.message)]
    return [_at(clique, base, cause, pod, template) for cause in error.causes]


def _at(
    clique: int, base: str, cause: StatusCause, pod: dict[str, Any], template: dict[str, Any]
) -> FieldError:
    field = clique_field(clique, cause.field, pod, template)
    if field is None:  # a field of podgang's own making: say which, on the clique
        return FieldError(field=base, reason=f"its pod's {cause.field}: {cause.message}")
    return FieldError(field=field, reason=cause.message)


async def dry_run_pods(kube: Kube, pcs: PodCliqueSet, startup_image: str) -> DryRunPodsReply:
    """One pod of each clique through the API server's validation and admission."""
    namespace = pcs.metadata.namespace
    try:
        samples = sample_pods(pcs, startup_image)
    except Exception as exc:  # a spec admission let through that podgang cannot plan
        log.warning("%s/%s: no pods to dry-run: %s", namespace, pcs.metadata.name, exc)
        return DryRunPodsReply(warnings=[f"pods not dry-run: {type(exc).__name__}: {exc}"])

    async def one(clique: int, pod: dict[str, Any]) -> DryRunPodsReply:
        try:
            await kube.request("POST", PODS.path(namespace), DRY_RUN, body=pod)
        except KubeError as exc:
            # Invalid, or refused by an admission rule that will refuse every such pod
            # (Pod Security): the PodCliqueSet's pods could never be made.
            if exc.status == 422 or (exc.status == 403 and "PodSecurity" in exc.message):
                template = msgspec.json.decode(pcs.spec.template.cliques[clique].spec.pod_spec)
                return DryRunPodsReply(errors=_refusals(clique, exc, pod, template))
            name = pcs.spec.template.cliques[clique].name
            return DryRunPodsReply(warnings=[f"pods of clique {name} not dry-run: {exc}"])
        return DryRunPodsReply()

    replies = await asyncio.gather(*(one(clique, pod) for clique, pod in samples))
    return DryRunPodsReply(
        errors=[e for reply in replies for e in reply.errors],
        warnings=[w for reply in replies for w in reply.warnings],
    )


@contextlib.asynccontextmanager
async def serve_dry_runs(
    nc: NatsClient, subjects: Subjects, kube: Kube, startup_image: str
) -> AsyncIterator[None]:
    """``dry-run-pods`` as a NATS micro service: every replica in one queue group."""
    service = await add_service(
        nc,
        name=subjects.service_name("podgang"),
        version="1.0.0",
        description="Gangway podgang: would the API server take a PodCliqueSet's pods",
    )

    # Connections of their own: on a large workload the reconcile's writes keep every
    # connection of the service's pool busy, and dry runs queued behind them past
    # admission's deadline.
    asking = Kube(kube.api.sibling(DRY_RUNS_AT_ONCE))

    def answer(asked: DryRunPodsRequest) -> Awaitable[DryRunPodsReply]:
        return dry_run_pods(asking, asked.podcliqueset, startup_image)

    # A failure is a 500: the webhook decides by its failure policy.
    handler = endpoint("dry-run pods", DryRunPodsRequest, answer, tracer=tracer)
    answering = SideBySide(handler, at_most=DRY_RUNS_AT_ONCE)
    try:
        await service.add_endpoint(
            name=PodgangOperation.DRY_RUN_PODS.value,
            subject=subjects.podgang(PodgangOperation.DRY_RUN_PODS),
            handler=answering,
        )
        yield
    finally:
        await service.stop()
        await answering.stop()
        await asking.api.close()
