"""``python -m gangway_admission``: settings from GANGWAY_* variables, then run until SIGTERM."""

from __future__ import annotations

import asyncio
from functools import partial

from gangway_admission.service import NAME, serve
from gangway_admission.settings import AdmissionSettings
from gangway_runtime.service import connections, run
from gangway_runtime.settings import load_settings


async def main(settings: AdmissionSettings) -> None:
    async with connections(settings.subjects.service_name(NAME), settings) as conn:
        ready = asyncio.Event()
        conn.probes.ready_when("webhook", ready.is_set)
        await serve(conn.nc, conn.js, conn.kube, settings, settings.scheduler_config(), ready=ready)


if __name__ == "__main__":
    settings = load_settings(AdmissionSettings)  # the certificate paths are required: GANGWAY_TLS_*
    run(partial(main, settings), settings)
