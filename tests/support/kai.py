"""KAI queues for tests: a department and queues under it (KAI schedules only from a queue
with a parent), created once per API server and kept (several tests share them)."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster.kai import QUEUES_PATH, queues
from gangway_runtime.kube import KubeError
from tests.integration.watcher.conftest import labelled
from tests.support.kube import kube_of
from tests.support.manifests import fixture

DEPARTMENT = "gangway-tests"


async def ensure_queue(api: ApiClient, name: str, gpu_limit: float = -1) -> str:
    """Queue ``name`` under the tests' department; ``gpu_limit`` caps the GPUs its running
    gangs may hold (its quota too). Returns ``name``."""
    for manifest in queues(name, DEPARTMENT, gpu_limit):
        try:
            await kube_of(api).request("POST", QUEUES_PATH, body=manifest)
        except KubeError as exc:
            if exc.status != 409:
                raise
    return name


QUEUE = "team-a"  # what the inference fixture PodCliqueSet names


def inference_manifests(namespace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inference PodCliqueSet and its base PodGang (topology, a packed scaling group)."""
    pcs = labelled(fixture("podcliquesets/disaggregated-inference.yaml"), namespace, "llama-disagg")
    gang = labelled(fixture("podgangs/base-gang.yaml"), namespace, "llama-disagg-0")
    gang.pop("status")
    return pcs, gang
