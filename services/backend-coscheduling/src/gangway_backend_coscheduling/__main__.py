"""``python -m gangway_backend_coscheduling``: the coscheduling backend process."""

from gangway_backend_coscheduling.backend import CoschedulingBackend
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings
from gangway_runtime.settings import load_settings

if __name__ == "__main__":
    settings = load_settings(BackendSettings)
    run(CoschedulingBackend.from_config(settings.scheduler_config()), settings)
