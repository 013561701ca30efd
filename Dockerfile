# One image for every Gangway service and job; the pod's args pick which:
#   python -m gangway_watcher | gangway_podgang | gangway_backend_kai | gangway_backend_kube
#   | gangway_backend_coscheduling | gangway_backend_koordinator | gangway_backend_volcano
#   | gangway_admission, or gangway deploy … (deploy/'s jobs).
# Build from the repository root:  docker build -t gangway:0.1.0 .
# Not built by CI here (its machine has no container engine); docs/operations.md says what
# was checked instead.

FROM python:3.11-slim-bookworm AS build
COPY --from=ghcr.io/astral-sh/uv:0.13.9 /uv /usr/local/bin/uv
# Compiled bytecode at build time: the root filesystem is read-only at run time.
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never \
    UV_PROJECT_ENVIRONMENT=/app/venv
WORKDIR /src
# The lock pins every dependency; the workspace packages are installed, not linked, and the
# development tools are left out.
COPY pyproject.toml uv.lock ./
COPY libs libs
COPY services services
COPY cli cli
RUN uv sync --frozen --no-dev --all-packages --no-editable

FROM python:3.11-slim-bookworm
COPY --from=build /app/venv /app/venv
ENV PATH=/app/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The same unprivileged user deploy/'s pods run as (runAsNonRoot, restricted).
USER 65532:65532
CMD ["gangway", "--help"]
