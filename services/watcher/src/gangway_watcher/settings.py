"""The watcher's settings: the runtime's, plus how it lists, watches and publishes."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from gangway_contracts.config import SchedulerConfig, load_operator_config, parse_scheduler_config
from gangway_runtime.settings import ServiceSettings


class WatcherSettings(ServiceSettings):
    # The operator configuration; its enabled backends decide which backend resources are
    # mirrored. Unset: default-scheduler alone, without gang scheduling.
    config_file: Path | None = None
    resync_seconds: float = Field(default=600.0, gt=0)
    watch_timeout_seconds: int = Field(default=300, ge=1)
    list_page_size: int = Field(default=500, ge=1)
    max_in_flight: int = Field(default=256, ge=1)

    def scheduler_config(self) -> SchedulerConfig:
        if self.config_file is None:
            return parse_scheduler_config(None)
        return load_operator_config(self.config_file.read_text())
