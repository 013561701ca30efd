"""Everything under deploy/ passes a server-side dry-run on the real API server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes_asyncio.client.api_client import ApiClient

from tests.support.kube import server_side_apply
from tests.support.paths import REPO

MANIFESTS = sorted((REPO / "deploy").rglob("*.yaml"))


@pytest.mark.parametrize("path", MANIFESTS, ids=lambda p: str(p.relative_to(REPO / "deploy")))
async def test_server_side_dry_run(api: ApiClient, namespace: str, path: Path) -> None:
    text = path.read_text()  # noqa: ASYNC240 - a small local file, read once
    documents: list[dict[str, Any]] = [d for d in yaml.safe_load_all(text) if d]
    assert documents, f"{path} holds no manifest"
    for doc in documents:
        applied = await server_side_apply(api, doc, namespace=namespace, dry_run=True)
        assert applied["metadata"]["name"] == doc["metadata"]["name"]
