"""``python -m gangway_backend_kube``: the default-scheduler backend process."""

from gangway_backend_kube.backend import KubeBackend
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings
from gangway_runtime.settings import load_settings

if __name__ == "__main__":
    settings = load_settings(BackendSettings)
    run(KubeBackend.from_config(settings.scheduler_config()), settings)
