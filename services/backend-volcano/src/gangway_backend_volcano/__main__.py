"""``python -m gangway_backend_volcano``: the volcano backend process."""

from gangway_backend_volcano.backend import VolcanoBackend
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings
from gangway_runtime.settings import load_settings

if __name__ == "__main__":
    settings = load_settings(BackendSettings)
    run(VolcanoBackend.from_config(settings.scheduler_config()), settings)
