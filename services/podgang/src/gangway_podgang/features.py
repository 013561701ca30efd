"""What the backend says of the features a PodCliqueSet's generation asks for: asked once per
generation in the write phase, the answer kept in the status (``FeaturesSupported``), so
computing the status never asks anyone anything."""

from __future__ import annotations

import logging

from gangway_contracts.k8s import Condition, find_condition
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from gangway_podgang import progress
from gangway_podgang.readmodel import WorkloadKey
from gangway_podgang.step import Step
from gangway_runtime.backends import BackendClient, BackendUnavailable
from gangway_runtime.status import now

log = logging.getLogger(__name__)

UNSUPPORTED_FEATURE = "UnsupportedFeature"  # the condition's reason when one is


class FeatureVerdicts:
    def __init__(self, backends: BackendClient) -> None:
        self.backends = backends

    async def ask(self, key: WorkloadKey, step: Step) -> Condition | None:
        """The backend's verdict on this generation; None when the status has it already or
        the backend does not answer (asked again at the next reconcile)."""
        generation = step.pcs.metadata.generation
        status = step.pcs.status
        judged = find_condition(status.conditions if status else [], progress.FEATURES_SUPPORTED)
        if judged is not None and judged.observed_generation == generation:
            return None
        request = ValidateRequest(operation="UPDATE", podcliqueset=step.pcs)
        try:
            verdict = await self.backends.validate(step.backend, request)
        except BackendUnavailable as exc:
            log.info("%s/%s: no feature verdict: %s", *key, exc)
            return None
        return verdict_condition(step, verdict)


def verdict_condition(step: Step, verdict: ValidateReply) -> Condition:
    """``FeaturesSupported`` as the backend's verdict says."""
    if verdict.unsupported:
        message = "; ".join(f"{u.field}: {u.feature}: {u.message}" for u in verdict.unsupported)
        ok, reason = False, UNSUPPORTED_FEATURE
    elif not verdict.allowed:
        message = "; ".join(map(str, verdict.errors))
        ok, reason = False, "Rejected"
    else:
        message = f"{step.backend} supports everything it asks for"
        ok, reason = True, "Supported"
    return progress.condition(step.pcs, progress.FEATURES_SUPPORTED, ok, reason, message, at=now())
