"""``python -m gangway_watcher``: settings from GANGWAY_* variables, then run until SIGTERM."""

from __future__ import annotations

from functools import partial

from gangway_contracts.resources import mirrored_resources
from gangway_runtime.service import connections, run
from gangway_runtime.settings import load_settings
from gangway_watcher.settings import WatcherSettings
from gangway_watcher.watcher import Watcher

NAME = "watcher"


async def main(settings: WatcherSettings) -> None:
    resources = mirrored_resources(settings.scheduler_config())
    # Each watch holds a connection for as long as it lasts: room for them beside the lists.
    pool = settings.api_connections + len(resources)
    settings = settings.model_copy(update={"api_connections": pool})
    async with connections(settings.subjects.service_name(NAME), settings) as conn:
        watcher = Watcher(conn.kube, conn.js, settings.subjects, resources, settings)
        conn.probes.ready_when("synced", watcher.ready)
        await watcher.run()


if __name__ == "__main__":
    settings = load_settings(WatcherSettings)
    run(partial(main, settings), settings)
