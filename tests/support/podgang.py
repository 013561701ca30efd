"""The podgang service under test, in the test's event loop: started, crashed, restarted."""

from __future__ import annotations

import asyncio
import contextlib
import copy
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_contracts import labels
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.resources import PODCLIQUES, PODCLIQUESCALINGGROUPS, PODS, SERVICES
from gangway_contracts.subjects import Subjects
from gangway_podgang.service import serve
from gangway_podgang.settings import PodgangSettings
from gangway_runtime import tasks
from tests.integration.watcher.conftest import TEST_LABEL, labelled, only_this_test
from tests.support.backends import live
from tests.support.kube import kube_of
from tests.support.manifests import fixture
from tests.support.store import eventually, running_watcher, until_ready


def workload(
    namespace: str, name: str, path: str = "podcliquesets/single-clique.yaml"
) -> dict[str, Any]:
    """A fixture PodCliqueSet for this test: labelled (and its cliques, so the watcher
    mirrors the pods made from them), and left to the default scheduler profile."""
    doc = labelled(fixture(path), namespace, name)
    for clique in doc["spec"]["template"]["cliques"]:
        clique["labels"] = {**clique.get("labels", {}), TEST_LABEL: namespace}
        clique["spec"]["podSpec"].pop("schedulerName", None)
    return copy.deepcopy(doc)


class Killed(BaseException):
    """The service dies here: nothing in it catches a BaseException, so it ends at once."""


@dataclass
class Podgang:
    """One podgang service; ``crash_after`` names a write ("pod:create") after whose
    first occurrence the service dies, as if killed between two writes."""

    api: ApiClient
    nc: NatsClient
    subjects: Subjects
    config: dict[str, Any]
    settings: dict[str, Any] = field(default_factory=dict)
    writes: list[str] = field(default_factory=list)
    crash_after: str | None = None
    on_write: Callable[[str], None] | None = None
    _task: asyncio.Task[None] | None = None

    def _after_write(self, write: str) -> None:
        self.writes.append(write)
        if self.on_write is not None:
            self.on_write(write)
        if write == self.crash_after:
            self.crash_after = None
            raise Killed(write)

    async def start(self) -> None:
        self._forget()
        settings = PodgangSettings(subject_prefix=self.subjects.prefix, **self.settings)
        ready = asyncio.Event()
        self._task = asyncio.create_task(
            serve(
                self.nc,
                self.nc.jetstream(),
                kube_of(self.api),
                settings,
                parse_scheduler_config(self.config),
                ready=ready,
                after_write=self._after_write,
            )
        )
        await until_ready(self._task, ready, "podgang service")

    @property
    def crashed(self) -> bool:
        return self._task is not None and self._task.done()

    async def stop(self) -> None:
        if self._task is not None:
            await tasks.stop(self._task)
            self._forget()

    def _forget(self) -> None:
        """Drop the ended task; a failure other than the crash asked for is raised."""
        task, self._task = self._task, None
        if task is not None and task.done() and not task.cancelled():
            error = task.exception()
            if error is not None and not isinstance(error, Killed):
                raise error


@contextlib.asynccontextmanager
async def running_podgang(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    config: dict[str, Any],
    watcher_nc: NatsClient | None = None,
    **settings: Any,
) -> AsyncIterator[Podgang]:
    """The service, plus a watcher (on ``watcher_nc``, else the service's connection) for
    what only it reads (this test's pods, headless Services, PodCliques and scaling
    groups); the backend's watcher
    (tests.support.backends) mirrors PodCliqueSets and PodGangs."""
    resources = [
        only_this_test(resource, namespace)
        for resource in (PODS, SERVICES, PODCLIQUES, PODCLIQUESCALINGGROUPS)
    ]
    service = Podgang(api, nc, subjects, config, settings)
    async with running_watcher(api, (watcher_nc or nc).jetstream(), subjects, resources):
        await service.start()
        try:
            yield service
        finally:
            await service.stop()


# What the flow made, read back: by name.
async def objects(api: ApiClient, namespace: str, path: str) -> dict[str, dict[str, Any]]:
    body = await kube_of(api).request("GET", path.format(ns=namespace))
    items: list[dict[str, Any]] = msgspec.json.decode(body)["items"]
    return {item["metadata"]["name"]: item for item in items}


async def podgangs(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return await objects(
        api, namespace, "/apis/scheduler.grove.io/v1alpha1/namespaces/{ns}/podgangs"
    )


async def pods(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return await objects(api, namespace, "/api/v1/namespaces/{ns}/pods")


async def services(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return await objects(api, namespace, "/api/v1/namespaces/{ns}/services")


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_]
    return found[0] if found else {}


async def live_when(
    api: ApiClient, doc: dict[str, Any], namespace: str, type_: str, **wanted: str
) -> dict[str, Any]:
    """The object ``doc`` names as the API server has it, once its condition ``type_``
    has every field of ``wanted`` (``status="False"``, ``reason="OverLimit"``…)."""

    def holds(found: dict[str, Any]) -> bool:
        said = condition(found, type_)
        return all(said.get(key) == value for key, value in wanted.items())

    return await eventually(partial(live, api, doc, namespace), holds)


def gated(pod: dict[str, Any]) -> bool:
    return any(
        g["name"] == labels.PODGANG_PENDING_CREATION_GATE
        for g in pod["spec"].get("schedulingGates") or []
    )
