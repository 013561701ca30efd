"""The podgang service's settings: the runtime's, plus how it consumes, writes and waits."""

from __future__ import annotations

from gangway_podgang import startup
from gangway_runtime.settings import ConsumerSettings, LimitSettings, Positive, Seconds


class PodgangSettings(LimitSettings, ConsumerSettings):
    # PodCliqueSets reconciled at once by one replica. A reconcile mostly waits (for its
    # writes, then for them to be mirrored) and a large PodCliqueSet's holds its worker
    # until every gang is made: with the kit's 8, four 10 000-gang workloads left four
    # workers to 10 000 one-gang ones, 14 s each under that load (bench/RESULTS.md). API
    # writes stay bounded by write_concurrency, whatever this is.
    workers: Positive = 32
    # API writes in flight at once across all PodCliqueSets (pod creates, gate lifts…).
    write_concurrency: Positive = 32
    # How long a prepare-pods or validate request waits for the backend.
    request_timeout_seconds: Seconds = 10.0
    # How long to wait for the read model to show a message, or our own writes.
    read_model_timeout_seconds: Seconds = 30.0
    # Steps (write, then wait for it to be mirrored) one gang takes in one reconcile before
    # the rest is left to later events.
    max_rounds: Positive = 8
    # Gangs of one PodCliqueSet being written at once: earlier gangs move on before later
    # ones start, so a large PodCliqueSet streams its gangs (writes stay bounded by
    # write_concurrency across all of them).
    gangs_in_flight: Positive = 64
    # The image of the init container that holds a pod back until the cliques it starts
    # after are ready (startup.py): Gangway's own; deploy/ and the chart set the one they run.
    startup_image: str = startup.IMAGE
