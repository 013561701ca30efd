"""``python -m gangway_backend_kube``: the default-scheduler backend process."""

from gangway_backend_kube.backend import KubeBackend
from gangway_backendkit.run import run
from gangway_backendkit.settings import BackendSettings

if __name__ == "__main__":
    settings = BackendSettings()
    run(KubeBackend.from_config(settings.scheduler_config()), settings)
