# One image for every Gangway service and job; the pod's args pick which:
#   python -m gangway_watcher | gangway_podgang | gangway_backend_kai | gangway_backend_kube
#   | gangway_backend_coscheduling | gangway_backend_koordinator | gangway_backend_volcano
#   | gangway_stage_kueue | gangway_admission, or gangway deploy … (deploy/'s jobs).
# Build from the repository root:  docker build -t gangway:0.1.0 .
# With no registry, `make image` builds it with podman on a Debian base and a uv image it
# makes locally, passed as BASE_IMAGE and UV_IMAGE (the tests on a real node run it).

# A Debian bookworm image with python3.11 (python.org's or Debian's), and one with /uv.
ARG BASE_IMAGE=python:3.11-slim-bookworm
ARG UV_IMAGE=ghcr.io/astral-sh/uv:0.13.9
FROM ${UV_IMAGE} AS uv

FROM ${BASE_IMAGE} AS build
# Marks both stages: `make image` removes the untagged ones a rebuild leaves behind.
LABEL dev.gangway.image=gangway
COPY --from=uv /uv /usr/local/bin/uv
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

FROM ${BASE_IMAGE}
LABEL dev.gangway.image=gangway
COPY --from=build /app/venv /app/venv
ENV PATH=/app/venv/bin:$PATH PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
# The same unprivileged user deploy/'s pods run as (runAsNonRoot, restricted).
USER 65532:65532
CMD ["gangway", "--help"]
