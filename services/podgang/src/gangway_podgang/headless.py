"""Which headless Services to write: one per PodCliqueSet replica, as Grove keeps them, and
one per clique that others start after (its ready pods, ``startup.py``). Pure.

A replica's Services are created with its base PodGang (the replica's own is named as the
gang; they travel in the same round), so they exist before any of the replica's pods can
run; changed back when a spec drifts from what the PodCliqueSet asks
(``headlessServiceConfig``); deleted with the replica on a scale-in. A Service of that name
Gangway did not make is not mirrored, so it is never touched: the create meets it (409) and
a Warning Event on the PodCliqueSet says so (``ServiceNameTaken``).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.services import Service
from gangway_podgang.discovery import service_name
from gangway_podgang.manifests import controlled_by, headless_service, ready_service
from gangway_podgang.plan import Plan


@dataclass(frozen=True)
class ServiceWrite:
    """The Service a replica should have, and the one it has (None: create it)."""

    desired: dict[str, Any]
    live: Service | None
    gang: str = ""  # the base gang it is written with (its own name when unset)

    @property
    def name(self) -> str:
        return str(self.desired["metadata"]["name"])

    @property
    def travels_with(self) -> str:
        return self.gang or self.name


def _as_desired(live: Service, desired: dict[str, Any]) -> bool:
    spec = desired["spec"]
    same_selector: bool = live.spec.selector == spec["selector"]
    return (
        same_selector and live.spec.publish_not_ready_addresses is spec["publishNotReadyAddresses"]
    )


def services_to_write(
    pcs: PodCliqueSet,
    plan: Plan,
    observed: Mapping[str, Service],
    focus: Collection[str] | None = None,
) -> tuple[tuple[ServiceWrite, ...], tuple[Service, ...]]:
    """(Services to create or change back, Services no longer planned). ``focus``: these
    gangs alone, deleting nothing (as :func:`decide.decide`)."""
    uid = pcs.metadata.uid
    # The replicas looked at: a partial decision's alone (each replica's base gang is named
    # as its Service), not every replica of a 10 000-replica workload each time.
    replicas: Collection[int] = (
        range(pcs.spec.replicas)
        if focus is None
        else {g.pcs_replica for g in plan.gangs if g.is_base and g.name in focus}
    )
    waited: dict[int, set[str]] = {}  # per replica: the cliques others wait on
    for gang in plan.gangs:
        if gang.pcs_replica in replicas:
            for group in gang.podgroups:
                if group.waits_on:
                    waited.setdefault(gang.pcs_replica, set()).update(n for n, _ in group.waits_on)
    writes: list[ServiceWrite] = []
    wanted: set[str] = set()
    for replica in sorted(replicas):
        base = service_name(pcs.metadata.name, replica)  # the replica's base gang's name too
        names = [base, *sorted(waited.get(replica, ()))]
        wanted.update(names)
        for name in names:
            if name == base:
                desired = headless_service(pcs, replica)
            else:
                desired = ready_service(pcs, replica, name)
            live = observed.get(name)
            if live is not None and (
                live.metadata.deletion_timestamp or _as_desired(live, desired)
            ):
                continue
            if live is not None and not controlled_by(live.metadata, uid):
                continue  # another PodCliqueSet's of the same name, before this one was made
            writes.append(ServiceWrite(desired, live, gang=base))
    stale: tuple[Service, ...] = ()
    if focus is None:
        stale = tuple(
            live
            for name, live in sorted(observed.items())
            if name not in wanted
            and not live.metadata.deletion_timestamp
            and controlled_by(live.metadata, uid)
        )
    return tuple(writes), stale
