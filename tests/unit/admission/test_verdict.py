"""The order admission decides in, and what the failure policy does."""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from gangway_admission.verdict import Policy, Reason, evaluate
from gangway_contracts import kueue
from gangway_contracts.codec import from_object
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.limits import Limits
from gangway_contracts.rpc import (
    DryRunPodsReply,
    UnsupportedFeature,
    ValidateReply,
    ValidateRequest,
)
from gangway_runtime.backends import BackendUnavailable
from gangway_runtime.consumer import Transient
from tests.support.manifests import fixture

CONFIG = parse_scheduler_config({"profiles": [{"name": "kai-scheduler"}]})


def request(doc: dict[str, Any], old: dict[str, Any] | None = None) -> ValidateRequest:
    return ValidateRequest(
        operation="UPDATE" if old else "CREATE",
        podcliqueset=from_object(doc, PodCliqueSet),
        old=from_object(old, PodCliqueSet) if old else None,
    )


class Backend:
    def __init__(self, reply: ValidateReply | None) -> None:
        self.reply = reply
        self.asked: list[str] = []

    async def __call__(self, backend: str, _: ValidateRequest) -> ValidateReply:
        self.asked.append(backend)
        if self.reply is None:
            raise BackendUnavailable(backend, "has no running replica (gangway.backend.x)")
        return self.reply


def single() -> dict[str, Any]:
    return copy.deepcopy(fixture("podcliquesets/single-clique.yaml"))


async def test_admitted_with_the_backends_warnings() -> None:
    unsupported = UnsupportedFeature(field="spec.x", feature="F", message="ignored")
    backend = Backend(ValidateReply(allowed=True, warnings=["w"], unsupported=[unsupported]))
    verdict = await evaluate(request(single()), CONFIG, backend)
    assert (verdict.allowed, verdict.reason, verdict.backend) == (
        True,
        Reason.ADMITTED,
        "kai-scheduler",
    )
    assert list(verdict.warnings) == ["w", "spec.x: ignored (F)"]
    assert backend.asked == ["kai-scheduler"]


async def test_structural_errors_reject_before_the_backend_is_asked() -> None:
    doc = single()
    doc["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] = 9
    backend = Backend(ValidateReply(allowed=True))
    verdict = await evaluate(request(doc), CONFIG, backend)
    assert (verdict.allowed, verdict.reason) == (False, Reason.INVALID)
    assert backend.asked == []


async def test_unknown_scheduler_names_the_enabled_ones() -> None:
    doc = single()
    doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"] = "volcano"
    verdict = await evaluate(request(doc), CONFIG, Backend(None))
    assert verdict.reason == Reason.SCHEDULER
    assert verdict.message == (
        'spec.template.cliques[0].spec.podSpec.schedulerName: "volcano" is not an enabled '
        "scheduler backend (enabled: default-scheduler, kai-scheduler)"
    )


async def test_backend_rejection_carries_its_errors() -> None:
    error = FieldError(field="metadata.labels[kai.scheduler/queue]", reason="needs a queue")
    verdict = await evaluate(
        request(single()), CONFIG, Backend(ValidateReply(allowed=False, errors=[error]))
    )
    assert (verdict.reason, list(verdict.errors)) == (Reason.BACKEND_REJECTED, [error])


async def test_backend_unavailable_fails_closed_by_default_and_open_when_asked() -> None:
    closed = await evaluate(request(single()), CONFIG, Backend(None))
    assert (closed.allowed, closed.reason) == (False, Reason.BACKEND_UNAVAILABLE)
    assert closed.message.startswith('scheduler backend "kai-scheduler" has no running replica')
    opened = await evaluate(request(single()), CONFIG, Backend(None), policy=Policy(fail_open=True))
    assert (opened.allowed, opened.reason) == (True, Reason.IGNORED)
    assert "failure policy Ignore" in opened.warnings[0]


async def test_metadata_only_update_is_never_blocked() -> None:
    old = single()
    new = copy.deepcopy(old)
    new["metadata"]["finalizers"] = []
    new["metadata"]["labels"] = {"x": "y"}
    backend = Backend(None)
    verdict = await evaluate(request(new, old), CONFIG, backend)
    assert (verdict.allowed, verdict.reason, backend.asked) == (True, Reason.UNCHANGED, [])


async def test_update_rules_apply() -> None:
    old = single()
    new = copy.deepcopy(old)
    new["spec"]["template"]["cliques"][0]["spec"]["podSpec"].pop("schedulerName")
    verdict = await evaluate(request(new, old), CONFIG, Backend(ValidateReply(allowed=True)))
    assert verdict.reason == Reason.IMMUTABLE


async def test_unreachable_backend_is_skipped_and_said() -> None:
    verdict = await evaluate(
        request(single()),
        CONFIG,
        Backend(None),
        policy=Policy(unreachable=frozenset({"kai-scheduler"})),
    )
    assert verdict.allowed
    assert verdict.skipped == [
        'validation by scheduler backend "kai-scheduler": it answers only in the cluster'
    ]


async def test_a_podcliqueset_over_the_ceiling_is_refused_by_its_replicas() -> None:
    """100 000 replicas were admitted, and podgang grew to 695 MiB building their PodGangs;
    the ceiling is the operator's to set (Policy.limits, from the service's settings)."""
    doc = single()
    doc["spec"]["replicas"] = 100_000
    backend = Backend(ValidateReply(allowed=True))
    verdict = await evaluate(request(doc), CONFIG, backend)
    assert (verdict.allowed, verdict.reason) == (False, Reason.INVALID)
    assert {e.field for e in verdict.errors} == {"spec.replicas"}  # pods and gangs
    assert "GANGWAY_MAX_PODS_PER_PODCLIQUESET" in verdict.errors[0].reason
    assert backend.asked == []
    roomy = Policy(limits=Limits(max_pods=10**9, max_gangs=10**9))
    assert (await evaluate(request(doc), CONFIG, backend, policy=roomy)).allowed


class DryRun:
    """podgang's dry run of the pods, as the webhook asks it."""

    def __init__(self, reply: DryRunPodsReply | None) -> None:
        self.reply = reply
        self.asked = 0

    async def __call__(self, _: PodCliqueSet) -> DryRunPodsReply:
        self.asked += 1
        if self.reply is None:
            raise Transient("podgang has no running replica (gangway.podgang.dry-run-pods)")
        return self.reply


async def test_the_api_servers_refusal_of_the_pods_comes_with_the_backends() -> None:
    backend_error = FieldError(field="metadata.labels[kai.scheduler/queue]", reason="no queue")
    pod_error = FieldError(field="spec.template.cliques[0].spec.podSpec.x", reason="Invalid")
    backend = Backend(ValidateReply(allowed=False, errors=[backend_error]))
    dry_run = DryRun(DryRunPodsReply(errors=[pod_error], warnings=["quota full"]))
    verdict = await evaluate(request(single()), CONFIG, backend, dry_run=dry_run)
    assert (verdict.allowed, verdict.reason) == (False, Reason.BACKEND_REJECTED)
    assert list(verdict.errors) == [backend_error, pod_error]
    assert list(verdict.warnings) == ["quota full"]
    verdict = await evaluate(
        request(single()), CONFIG, Backend(ValidateReply(allowed=True)), dry_run=dry_run
    )
    assert (verdict.allowed, verdict.reason, verdict.backend) == (
        False,
        Reason.PODS_INVALID,
        "kai-scheduler",
    )


async def test_podgang_away_fails_closed_by_default_and_open_when_asked() -> None:
    backend = Backend(ValidateReply(allowed=True))
    closed = await evaluate(request(single()), CONFIG, backend, dry_run=DryRun(None))
    assert (closed.allowed, closed.reason) == (False, Reason.PODGANG_UNAVAILABLE)
    assert closed.message == (
        "podgang has no running replica (gangway.podgang.dry-run-pods): cannot dry-run the "
        "PodCliqueSet's pods, try again"
    )
    opened = await evaluate(
        request(single()), CONFIG, backend, policy=Policy(fail_open=True), dry_run=DryRun(None)
    )
    assert (opened.allowed, opened.reason) == (True, Reason.IGNORED)
    assert "without the API server's dry run" in opened.warnings[0]


async def test_an_update_that_changes_no_clique_makes_no_new_pod_to_dry_run() -> None:
    old = single()
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    dry_run = DryRun(None)
    verdict = await evaluate(
        request(new, old), CONFIG, Backend(ValidateReply(allowed=True)), dry_run=dry_run
    )
    assert (verdict.allowed, dry_run.asked) == (True, 0)
    new["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["restartPolicy"] = "Always"
    verdict = await evaluate(
        request(new, old), CONFIG, Backend(ValidateReply(allowed=True)), dry_run=dry_run
    )
    assert (verdict.allowed, dry_run.asked) == (False, 1)


async def test_required_packing_kueue_chooses_the_domain_for_is_not_the_backends_to_refuse() -> (
    None
):
    """Where Kueue picks the domains (kueue.topology), the pods are pinned to theirs before
    their gates lift: a backend's "cannot honour required packing" does not stand; any
    other objection of the backend's does."""
    config = replace(CONFIG, kueue=True, kueue_topology=True)
    doc = single()
    doc["metadata"].setdefault("labels", {})[kueue.QUEUE_LABEL] = "team"
    cannot_pack = FieldError(field="spec.template.topologyConstraint.pack.required", reason="no")
    other = FieldError(field="spec.template.cliques[0].spec.minAvailable", reason="no")
    refusing = Backend(ValidateReply(allowed=False, errors=[cannot_pack]))
    verdict = await evaluate(request(doc), config, refusing)
    assert (verdict.allowed, verdict.reason) == (True, Reason.ADMITTED)
    both = Backend(ValidateReply(allowed=False, errors=[cannot_pack, other]))
    verdict = await evaluate(request(doc), config, both)
    assert (verdict.allowed, [e.field for e in verdict.errors]) == (False, [other.field])
    # In no queue, the backend's word stands.
    del doc["metadata"]["labels"][kueue.QUEUE_LABEL]
    verdict = await evaluate(request(doc), config, refusing)
    assert verdict.allowed is False
