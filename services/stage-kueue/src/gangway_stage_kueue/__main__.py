"""``python -m gangway_stage_kueue``: the Kueue stage process."""

from __future__ import annotations

import asyncio
from functools import partial

from gangway_contracts import kueue
from gangway_runtime.service import connections, run
from gangway_runtime.settings import ConsumerSettings, load_settings
from gangway_stage_kueue.service import serve


async def main(settings: ConsumerSettings) -> None:
    async with connections(settings.subjects.service_name(kueue.STAGE), settings) as conn:
        ready = asyncio.Event()
        conn.probes.ready_when("serving", ready.is_set)
        await serve(conn.js, conn.kube, settings, config=settings.scheduler_config(), ready=ready)


if __name__ == "__main__":
    settings = load_settings(ConsumerSettings)
    run(partial(main, settings), settings)
