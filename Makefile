# The two commands people run. Everything they need is installed by tools/bootstrap.sh.
.PHONY: up test lint typecheck unit integration schema crds bootstrap image

# uv lands here when tools/bootstrap.sh installs it with pip --user.
export PATH := $(HOME)/.local/bin:$(PATH)

bootstrap:
	@bash tools/bootstrap.sh

up: bootstrap
	uv run --frozen gangway up

test: bootstrap lint typecheck
	uv run --frozen python -m gangway_localcluster --node
	uv run --frozen pytest -n 2 --dist loadgroup tests

lint:
	uv run --frozen ruff check .
	uv run --frozen ruff format --check .
	uv run --frozen lint-imports

typecheck:
	uv run --frozen mypy
	uv run --frozen mypy tests
	uv run --frozen mypy bench

# Gangway's image: podman and no registry, or Docker (docs/operations.md, "Install").
image: bootstrap
	uv run --frozen python -m gangway_localcluster.images

unit: bootstrap
	uv run --frozen pytest tests/unit

schema:
	uv run --frozen python -m gangway_contracts.schema --write

# deploy/crds from the contracts' views and the Kubernetes OpenAPI (downloads k8s.io/kubernetes).
crds:
	uv run --frozen python -m gangway_localcluster.crds --write
