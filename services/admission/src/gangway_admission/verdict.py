"""One PodCliqueSet in, admitted or rejected with every reason out.

The order is GREP-375's: structural checks and update rules, then the scheduler the
cliques name, then that backend's own validation — and, beside it, the API server's own
verdict on the pods the PodCliqueSet would make (podgang dry-runs one of each clique; the
webhook may not create pods). Both are asked only about an object that passed everything
before them, and a failure of either to answer is decided by the failure policy (closed by
default). The webhook and ``gangway validate`` both call :func:`evaluate`; they differ in how
the backend is asked, and offline no pod is dry-run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

from gangway_admission.checks import check_podcliqueset, check_update
from gangway_contracts import kueue
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError, FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.limits import Limits
from gangway_contracts.rpc import DryRunPodsReply, ValidateReply, ValidateRequest
from gangway_runtime.backends import BackendUnavailable
from gangway_runtime.consumer import Transient


class Reason(StrEnum):
    """Why a PodCliqueSet was admitted or rejected; a metrics label, so a closed set."""

    ADMITTED = "Admitted"
    UNCHANGED = "SpecUnchanged"  # metadata-only updates (finalizers, labels) never block
    IGNORED = "FailureIgnored"  # no verdict reached, admitted by failure policy Ignore
    MALFORMED = "Malformed"
    INVALID = "Invalid"
    IMMUTABLE = "Immutable"
    SCHEDULER = "SchedulerNotResolved"
    BACKEND_REJECTED = "BackendRejected"
    BACKEND_UNAVAILABLE = "BackendUnavailable"
    PODS_INVALID = "PodsInvalid"  # the API server refuses the pods it would make
    PODGANG_UNAVAILABLE = "PodgangUnavailable"
    TIMEOUT = "ReviewTimeout"
    ERROR = "InternalError"


# How a backend is asked: over NATS in the webhook, in-process offline.
AskBackend = Callable[[str, ValidateRequest], Awaitable[ValidateReply]]
# How the pods are dry-run: podgang over NATS in the webhook; raises Transient when away.
DryRunPods = Callable[[PodCliqueSet], Awaitable[DryRunPodsReply]]


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    reason: Reason
    errors: Sequence[FieldError] = ()
    warnings: Sequence[str] = ()
    skipped: Sequence[str] = ()  # checks that could not run, and why
    backend: str | None = None

    @property
    def message(self) -> str:
        """What the client reads after "denied the request: "."""
        return "; ".join(map(str, self.errors))


@dataclass
class Policy:
    """How admission behaves where the issue leaves a choice to the operator."""

    fail_open: bool = False  # backend not answering: admit with a warning instead of reject
    limits: Limits = field(default_factory=Limits)  # what one PodCliqueSet may make
    # Backends that cannot be asked here (offline: the external ones): skipped, and said so.
    unreachable: frozenset[str] = frozenset()


def rejected(reason: Reason, errors: Sequence[FieldError]) -> Verdict:
    return Verdict(allowed=False, reason=reason, errors=errors)


async def evaluate(
    request: ValidateRequest,
    config: SchedulerConfig,
    ask: AskBackend,
    levels: Sequence[str] | None = None,
    policy: Policy | None = None,
    *,
    dry_run: DryRunPods | None = None,
) -> Verdict:
    pcs, old = request.podcliqueset, request.old
    # A queue named afterwards is no metadata-only change: the gates will wait for Kueue.
    same_queue = old is not None and kueue.queue_of(old.metadata.labels) == kueue.queue_of(
        pcs.metadata.labels
    )
    if old is not None and old.spec == pcs.spec and same_queue:
        return Verdict(allowed=True, reason=Reason.UNCHANGED)
    policy = policy or Policy()
    findings = check_podcliqueset(pcs, levels, policy.limits)
    verdict = await _decide(request, config, ask, findings.errors, policy=policy, dry_run=dry_run)
    return replace(
        verdict,
        skipped=[*findings.skipped, *verdict.skipped],
        warnings=[*findings.warnings, *verdict.warnings],
    )


async def _decide(
    request: ValidateRequest,
    config: SchedulerConfig,
    ask: AskBackend,
    structural: Sequence[FieldError],
    *,
    policy: Policy,
    dry_run: DryRunPods | None,
) -> Verdict:
    pcs, old = request.podcliqueset, request.old
    if structural:
        return rejected(Reason.INVALID, structural)
    if old is not None and (immutable := check_update(old, pcs)):
        return rejected(Reason.IMMUTABLE, immutable)
    try:
        backend = config.backend_for(pcs)
    except FieldErrors as exc:
        return rejected(Reason.SCHEDULER, exc.errors)
    if queue_errors := kueue.problems(pcs, config.kueue, config.kueue_topology):
        return rejected(Reason.INVALID, queue_errors)

    async def by_backend() -> Verdict:
        if backend in policy.unreachable:
            skipped = f'validation by scheduler backend "{backend}": it answers only in the cluster'
            admitted = Verdict(allowed=True, reason=Reason.ADMITTED, backend=backend)
            return replace(admitted, skipped=[skipped])
        said = await _ask(backend, request, ask, policy)
        if config.kueue_topology and kueue.queue_of(pcs.metadata.labels):
            return _packed_by_kueue(said)
        return said

    same_pods = old is not None and old.spec.template.cliques == pcs.spec.template.cliques
    if dry_run is None or same_pods:  # an update that changes no clique changes no pod
        return await by_backend()
    # Asked at once: the review's time is the slower of the two, not their sum.
    asked, tried = await asyncio.gather(by_backend(), _dry_run(pcs, dry_run, policy))
    return _both(asked, tried)


def _packed_by_kueue(said: Verdict) -> Verdict:
    """The backend's verdict where Kueue chooses the gang's domains: its scheduler need not
    honour required packing itself (each pod is pinned to its domain before its gate
    lifts), so its objection to that alone does not stand."""
    if said.allowed or said.reason != Reason.BACKEND_REJECTED:
        return said
    errors = [e for e in said.errors if not e.field.endswith(".pack.required")]
    if errors:
        return replace(said, errors=errors)
    return Verdict(
        allowed=True, reason=Reason.ADMITTED, warnings=said.warnings, backend=said.backend
    )


def _both(asked: Verdict, tried: Verdict) -> Verdict:
    """The backend's verdict and the dry run's as one: rejected if either rejects, with
    every error (the backend's first) and every warning; the reason of the one that
    rejected, or that was not reached (failure policy Ignore)."""
    telling = [v for v in (asked, tried) if not v.allowed] or [
        v for v in (asked, tried) if v.reason == Reason.IGNORED
    ]
    first = (telling or [asked])[0]
    return replace(
        first,
        allowed=asked.allowed and tried.allowed,
        errors=[*asked.errors, *tried.errors],
        warnings=[*asked.warnings, *tried.warnings],
        skipped=[*asked.skipped, *tried.skipped],
        backend=asked.backend,
    )


async def _dry_run(pcs: PodCliqueSet, dry_run: DryRunPods, policy: Policy) -> Verdict:
    admitted = Verdict(allowed=True, reason=Reason.ADMITTED)
    try:
        reply = await dry_run(pcs)
    except Transient as exc:
        if policy.fail_open:
            warning = f"{exc}; its pods admitted without the API server's dry run"
            return replace(admitted, reason=Reason.IGNORED, warnings=[warning])
        why = f"{exc}: cannot dry-run the PodCliqueSet's pods, try again"
        return rejected(Reason.PODGANG_UNAVAILABLE, [FieldError(field="", reason=why)])
    if reply.errors:
        return replace(rejected(Reason.PODS_INVALID, reply.errors), warnings=reply.warnings)
    return replace(admitted, warnings=reply.warnings)


async def _ask(backend: str, request: ValidateRequest, ask: AskBackend, policy: Policy) -> Verdict:
    admitted = Verdict(allowed=True, reason=Reason.ADMITTED, backend=backend)
    try:
        reply = await ask(backend, request)
    except BackendUnavailable as exc:
        if policy.fail_open:
            warning = f"{exc}; admitted without its validation (failure policy Ignore)"
            return replace(admitted, reason=Reason.IGNORED, warnings=[warning])
        error = FieldError(field="", reason=f"{exc}: cannot validate the PodCliqueSet, try again")
        return replace(rejected(Reason.BACKEND_UNAVAILABLE, [error]), backend=backend)
    warnings = [
        *reply.warnings,
        *(f"{u.field}: {u.message} ({u.feature})" for u in reply.unsupported),
    ]
    if not reply.allowed:
        errors = reply.errors or [FieldError(field="", reason=f'rejected by "{backend}"')]
        verdict = rejected(Reason.BACKEND_REJECTED, errors)
        return replace(verdict, warnings=warnings, backend=backend)
    return replace(admitted, warnings=warnings)
