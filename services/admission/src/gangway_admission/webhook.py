"""The validating webhook: one AdmissionReview in, one answer out, always in time.

Whatever arrives, the answer is an AdmissionReview within ``review_timeout_seconds`` (or a
400 for a body that is not one, or a 413 for one too large to read): a malformed object is
rejected naming its field, a slow backend is decided by the failure policy, a bug is logged
and answered as the failure policy says. Every rejection is journaled.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Final

from aiohttp import web
from opentelemetry import trace

from gangway_admission import metrics
from gangway_admission.review import (
    AdmissionRequest,
    Malformed,
    Operation,
    TooDeep,
    read_podcliqueset,
    read_review,
    response,
)
from gangway_admission.verdict import (
    AskBackend,
    DryRunPods,
    Policy,
    Reason,
    Verdict,
    evaluate,
    rejected,
)
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.errors import FieldError
from gangway_contracts.events import AdmissionRejected
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import NamespacedName
from gangway_contracts.rpc import ValidateRequest
from gangway_runtime import logs, tracing

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.admission")

PATH: Final = "/validate/podcliquesets"

# The topology levels (broadest first) a PodCliqueSet's constraints are read against, with
# a note when they cannot be had; None: Grove's domains.
LevelsFor = Callable[[PodCliqueSet], Awaitable[tuple[Sequence[str] | None, str | None]]]
Journal = Callable[[AdmissionRejected], Awaitable[None]]


class Webhook:
    def __init__(
        self,
        config: SchedulerConfig,
        ask: AskBackend,
        levels_for: LevelsFor,
        journal: Journal,
        *,
        policy: Policy,
        review_timeout: float,
        service: str,
        dry_run: DryRunPods | None = None,
    ) -> None:
        self.config = config
        self.dry_run = dry_run
        self.ask = ask
        self.levels_for = levels_for
        self.journal = journal
        self.policy = policy
        self.review_timeout = review_timeout
        self.service = service

    def app(self, max_request_bytes: int) -> web.Application:
        app = web.Application(client_max_size=max_request_bytes)
        app.router.add_post(PATH, self.handle)
        return app

    async def handle(self, request: web.Request) -> web.Response:
        started = time.monotonic()
        body = await request.read()  # over client_max_size: 413, raised by aiohttp
        try:
            review = read_review(body)
        except Malformed as exc:
            metrics.BAD_REQUESTS.inc()
            return web.Response(status=400, text=f"{exc}\n")
        except TooDeep as exc:
            uid, about = exc.uid, None
            verdict = rejected(Reason.MALFORMED, [FieldError(field="object", reason=str(exc))])
            metrics.REVIEWS.labels("", "rejected", verdict.reason.value).inc()
        else:
            uid, about = review.request.uid, review.request
            verdict = await self.review(review.request)
        metrics.REVIEW_SECONDS.observe(time.monotonic() - started)
        return web.Response(body=response(uid, verdict, about), content_type="application/json")

    async def review(self, request: AdmissionRequest) -> Verdict:
        if request.operation not in ("CREATE", "UPDATE"):
            return Verdict(allowed=True, reason=Reason.ADMITTED)
        with logs.handling((request.namespace, request.name)):
            pcs = read_podcliqueset(request.object, "object")
            if isinstance(pcs, FieldError):
                verdict = rejected(Reason.MALFORMED, [pcs])
                await self._said(request, verdict)
                return verdict
            with tracer.start_as_current_span(
                "admission review", context=tracing.workload_context(pcs.metadata.uid)
            ) as span:
                span.set_attribute("gangway.operation", request.operation)
                verdict = await self._timed(request, pcs)
                span.set_attribute("gangway.allowed", verdict.allowed)
                await self._said(request, verdict)  # in the span: the log line has its trace
                return verdict

    async def _said(self, request: AdmissionRequest, verdict: Verdict) -> None:
        """Count, log and (a real rejection) journal the verdict."""
        result = "admitted" if verdict.allowed else "rejected"
        metrics.REVIEWS.labels(request.operation, result, verdict.reason.value).inc()
        log.info(
            "%s %s/%s: %s (%s)%s",
            request.operation,
            request.namespace,
            request.name,
            result,
            verdict.reason.value,
            f": {verdict.message}" if not verdict.allowed else "",
        )
        if not verdict.allowed and not request.dry_run:
            await self._journal(request, verdict, tracing.trace_id_hex())

    async def _timed(self, request: AdmissionRequest, pcs: PodCliqueSet) -> Verdict:
        old = None
        if request.operation == "UPDATE":
            # The stored version unreadable (written before admission existed): no update
            # rules to apply against it, the new version is still checked in full.
            read = read_podcliqueset(request.old_object, "oldObject")
            old = read if isinstance(read, PodCliqueSet) else None
        operation: Operation = "UPDATE" if request.operation == "UPDATE" else "CREATE"
        asked = ValidateRequest(operation=operation, podcliqueset=pcs, old=old)
        try:
            async with asyncio.timeout(self.review_timeout):
                levels, note = await self.levels_for(pcs)
                verdict = await evaluate(
                    asked, self.config, self.ask, levels, self.policy, dry_run=self.dry_run
                )
        except TimeoutError:
            why = f"admission did not finish within {self.review_timeout:g}s"
            return self._failed(Reason.TIMEOUT, why)
        except Exception as exc:  # a bug must not become a silent admit or a 500
            log.exception("reviewing %s/%s", request.namespace, request.name)
            return self._failed(Reason.ERROR, f"admission failed: {type(exc).__name__}")
        if note:
            log.info("%s/%s: %s", request.namespace, request.name, note)
        for skipped in verdict.skipped:
            log.info("%s/%s: skipped %s", request.namespace, request.name, skipped)
        return verdict

    def _failed(self, reason: Reason, why: str) -> Verdict:
        """The failure policy's answer when no verdict could be reached."""
        if self.policy.fail_open:
            warning = f"{why}; admitted unchecked (failure policy Ignore)"
            return Verdict(allowed=True, reason=Reason.IGNORED, warnings=[warning])
        return rejected(reason, [FieldError(field="", reason=f"{why}, try again")])

    async def _journal(self, request: AdmissionRequest, verdict: Verdict, trace_id: str) -> None:
        event = AdmissionRejected(
            workload=NamespacedName(namespace=request.namespace, name=request.name),
            at=datetime.now(UTC),
            service=self.service,
            trace_id=trace_id,
            operation=request.operation,
            errors=list(verdict.errors),
        )
        await self.journal(event)
