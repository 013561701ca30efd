"""Saying what happened: a journal event on the bus and a Kubernetes Event on the
PodCliqueSet, for every step of its gangs.

Both are best effort: losing one must never undo or repeat a write, so failures are logged
and the reconcile goes on.
"""

from __future__ import annotations

import logging
import secrets
import socket
from datetime import UTC, datetime
from typing import Any

from gangway_contracts.events import JournalEvent, event_type
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import NamespacedName
from gangway_runtime import tracing
from gangway_runtime.journal import JournalWriter
from gangway_runtime.kube import ApiResource, Kube, KubeError

log = logging.getLogger(__name__)

EVENTS = ApiResource("events.k8s.io", "v1", "events")
REPORTING_CONTROLLER = "gangway.dev/podgang"


class Reporter:
    def __init__(self, kube: Kube, journal: JournalWriter, service: str) -> None:
        self.kube = kube
        self.journal_writer = journal
        self.service = service
        self.instance = socket.gethostname()

    def common(self, pcs: PodCliqueSet) -> dict[str, Any]:
        """The fields every journal event of this workload carries."""
        return {
            "workload": NamespacedName(namespace=pcs.metadata.namespace, name=pcs.metadata.name),
            "at": datetime.now(UTC),
            "service": self.service,
            "trace_id": tracing.trace_id_hex(),
        }

    async def report(
        self, pcs: PodCliqueSet, event: JournalEvent, note: str, warning: bool = False
    ) -> None:
        await self.journal(event)
        await self.kube_event(pcs, event_type(event), note, warning)

    async def journal(self, event: JournalEvent, once: str = "") -> None:
        # Buffered and stored in order, retried through a failover: never waited for here.
        self.journal_writer.put(event, once)

    async def kube_event(self, pcs: PodCliqueSet, reason: str, note: str, warning: bool) -> None:
        meta = pcs.metadata
        event = {
            "apiVersion": EVENTS.api_version,
            "kind": "Event",
            "metadata": {
                "name": f"{meta.name}.{secrets.token_hex(8)}",
                "namespace": meta.namespace,
            },
            "eventTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "reportingController": REPORTING_CONTROLLER,
            "reportingInstance": self.instance,
            "action": reason,
            "reason": reason,
            "note": note[:1024],
            "type": "Warning" if warning else "Normal",
            "regarding": {
                "apiVersion": pcs.api_version,
                "kind": pcs.kind,
                "namespace": meta.namespace,
                "name": meta.name,
                "uid": meta.uid,
            },
        }
        try:
            await self.kube.request("POST", EVENTS.path(meta.namespace), body=event)
        except KubeError as exc:
            log.warning("event %s on %s/%s: %s", reason, meta.namespace, meta.name, exc)
