"""Settings for the whole suite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

import pytest
from hypothesis import HealthCheck, settings
from kubernetes_asyncio.client.api_client import ApiClient

from tests.support.kube import fresh_namespace

# CI machines have 2 cores shared with a control plane: judge properties, not speed.
settings.register_profile(
    "ci", deadline=None, suppress_health_check=[HealthCheck.too_slow], max_examples=200
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# Folders whose tests share one cluster of their own, by the xdist group that keeps them on
# one worker (else each worker would start one).
ONE_WORKER_FOLDERS = {"tests/e2e": "e2e", "tests/chaos": "chaos", "tests/node": "real-node"}


# Before xdist's own hook reads the group.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for folder, group in ONE_WORKER_FOLDERS.items():
            if folder in str(item.path):
                item.add_marker(pytest.mark.integration)
                item.add_marker(pytest.mark.xdist_group(group))


@pytest.fixture
async def namespace(api: ApiClient) -> AsyncIterator[str]:
    """A namespace of this test's own on the cluster its ``api`` talks to."""
    async with fresh_namespace(api) as name:
        yield name
