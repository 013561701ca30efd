"""``python -m gangway_backend_kai``: the kai-scheduler backend process."""

from gangway_backend_kai.backend import KaiBackend
from gangway_backendkit.run import run

if __name__ == "__main__":
    run(KaiBackend())
