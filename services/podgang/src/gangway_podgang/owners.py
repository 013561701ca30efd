"""Is there a PodCliqueSet at all? The one question podgang asks the API server by reading.

The store can hold a PodCliqueSet the API server does not: a record forged onto the bus, or a
deletion the store has not shown yet. What podgang writes for it does not stay (the garbage
collector takes what a missing owner owns), so once found, its uid is a phantom: nothing more
is made for it.
"""

from __future__ import annotations

import logging

from gangway_contracts.grove import PodCliqueSet
from gangway_podgang import metrics
from gangway_podgang.readmodel import WorkloadKey
from gangway_runtime.kube import Kube
from gangway_runtime.objects import Recent
from gangway_runtime.status import PODCLIQUESETS

log = logging.getLogger(__name__)


class Owners:
    def __init__(self, kube: Kube) -> None:
        self.kube = kube
        # In memory and bounded: after a restart, or once forgotten, the first status write
        # finds one again, with one read.
        self.phantoms: Recent[str, bool] = Recent(at_most=10_000)

    def is_phantom(self, pcs: PodCliqueSet) -> bool:
        return pcs.metadata.uid in self.phantoms

    async def missing(self, key: WorkloadKey, pcs: PodCliqueSet) -> bool:
        """True (and the uid a phantom from now on) when the API server has no PodCliqueSet
        of this uid. Asked once per phantom."""
        live = await self.kube.read(PODCLIQUESETS, pcs.metadata.namespace, pcs.metadata.name)
        if live is not None and live["metadata"]["uid"] == pcs.metadata.uid:
            return False
        self.phantoms[pcs.metadata.uid] = True
        log.warning(
            "%s/%s: the API server has no PodCliqueSet of uid %s, which the store holds: "
            "nothing more is made for it",
            *key,
            pcs.metadata.uid,
        )
        metrics.PHANTOMS.inc()
        return True
