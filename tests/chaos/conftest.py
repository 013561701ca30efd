"""The chaos suite's servers: one control plane (kube-scheduler, kwok nodes, the garbage
collector) for every chaos test, and per test a fresh nats-server and fresh service
processes, a namespace of its own."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_localcluster import kueue
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nodes import NodePool
from tests.chaos.scenario import CLUSTER_QUEUE, TAS_CLUSTER_QUEUE, System, start_system
from tests.support.kube import admin_client, fresh_namespace


@pytest.fixture(scope="session")
def chaos_cluster() -> Iterator[ControlPlane]:
    with ControlPlane.start(crds=crd_files(), scheduling=True) as cp:
        cp.add_nodes(NodePool(count=4, prefix="chaos"))
        yield cp


@contextlib.contextmanager
def _started(cp: ControlPlane, workdir: Path, **how: bool) -> Iterator[System]:
    started = start_system(cp, workdir, **how)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def system(chaos_cluster: ControlPlane, tmp_path: Path) -> Iterator[System]:
    with _started(chaos_cluster, tmp_path) as started:
        yield started


@pytest.fixture
def cluster_system(chaos_cluster: ControlPlane, tmp_path: Path) -> Iterator[System]:
    with _started(chaos_cluster, tmp_path, cluster=True) as started:
        yield started


@pytest.fixture
def memory_system(chaos_cluster: ControlPlane, tmp_path: Path) -> Iterator[System]:
    with _started(chaos_cluster, tmp_path, memory=True) as started:
        yield started


@pytest.fixture
def kueue_system(chaos_cluster: ControlPlane, tmp_path: Path) -> Iterator[System]:
    """The services and the Kueue stage, Kueue's manager running in the cluster (started
    once, kept) with a ClusterQueue room for any chaos workload."""
    chaos_cluster.start_kueue()
    chaos_cluster.create(kueue.RESOURCE_FLAVORS, kueue.resource_flavor())
    quota = {"cpu": "1000", "memory": "1Ti"}
    chaos_cluster.create(kueue.CLUSTER_QUEUES, kueue.cluster_queue(CLUSTER_QUEUE, quota))
    with _started(chaos_cluster, tmp_path, kueue=True) as started:
        yield started


@pytest.fixture
def kueue_topology_system(chaos_cluster: ControlPlane, tmp_path: Path) -> Iterator[System]:
    """As :func:`kueue_system`, Kueue choosing the gangs' domains too: a ClusterQueue over a
    flavor of a Topology of the chaos nodes' labels."""
    chaos_cluster.start_kueue()
    for collection, made in kueue.flavor_of_domains(TAS_CLUSTER_QUEUE):
        chaos_cluster.create(collection, made)
    quota = {"cpu": "1000", "memory": "1Ti"}
    queue = kueue.cluster_queue(TAS_CLUSTER_QUEUE, quota, flavor=TAS_CLUSTER_QUEUE)
    chaos_cluster.create(kueue.CLUSTER_QUEUES, queue)
    with _started(chaos_cluster, tmp_path, kueue=True, kueue_topology=True) as started:
        yield started


@pytest.fixture
async def api(chaos_cluster: ControlPlane) -> AsyncIterator[ApiClient]:
    async with admin_client(chaos_cluster.kubeconfig) as client:
        yield client


@pytest.fixture
async def namespace(api: ApiClient) -> AsyncIterator[str]:
    async with fresh_namespace(api) as name:
        yield name
