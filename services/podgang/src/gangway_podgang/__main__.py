"""``python -m gangway_podgang``: settings from GANGWAY_* variables, then run until SIGTERM."""

from __future__ import annotations

import asyncio
from functools import partial

from gangway_podgang.service import NAME, serve
from gangway_podgang.settings import PodgangSettings
from gangway_runtime.service import connections, run
from gangway_runtime.settings import load_settings


async def main(settings: PodgangSettings) -> None:
    async with connections(settings.subjects.service_name(NAME), settings) as conn:
        ready = asyncio.Event()
        conn.probes.ready_when("loaded", ready.is_set)
        await serve(conn.nc, conn.js, conn.kube, settings, settings.scheduler_config(), ready=ready)


if __name__ == "__main__":
    settings = load_settings(PodgangSettings)
    run(partial(main, settings), settings)
