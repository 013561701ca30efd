"""``python -m gangway_backend_koordinator``: the koordinator backend process."""

from gangway_backend_koordinator.backend import KoordinatorBackend
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings
from gangway_runtime.settings import load_settings

if __name__ == "__main__":
    settings = load_settings(BackendSettings)
    run(KoordinatorBackend.from_config(settings.scheduler_config()), settings)
