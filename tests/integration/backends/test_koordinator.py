"""backend-koordinator against the real API server serving Koordinator's CRDs (from its module
download): a gang per podgroup in one GangGroup (the API server validates each PodGroup),
updates and drift repair, pods the API accepts."""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_koordinator.backend import KoordinatorBackend
from gangway_backend_koordinator.builtin import NAME as KOORDINATOR
from gangway_backend_koordinator.builtin import KoordinatorConfig
from gangway_backend_koordinator.translate import GROUPS, MODE, POD_GROUP_LABEL, PODGROUPS
from gangway_contracts.subjects import Subjects
from tests.integration.watcher.conftest import podgang
from tests.support.backends import (
    backend_synced,
    gated_pod,
    live,
    prepared_and_created,
    running_backend,
)
from tests.support.kube import kube_of, resource_path, server_side_apply
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": KOORDINATOR, "config": {"mode": "NonStrict"}}]}
WORKER = "llama-disagg-0-prefill-0-pworker"


def base_gang(namespace: str) -> dict[str, Any]:
    return podgang(namespace, "llama-disagg-0", KOORDINATOR)


def podgroup(name: str) -> dict[str, Any]:
    return {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup", "metadata": {"name": name}}


async def test_a_podgang_becomes_a_gang_group(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    gang = base_gang(namespace)
    names = [g["name"] for g in gang["spec"]["podgroups"]]
    backend = KoordinatorBackend(KoordinatorConfig(mode="NonStrict"))
    async with running_backend(api, nc, subjects, namespace, backend, CONFIG):
        await server_side_apply(api, gang, namespace)
        made = {}
        for spec in gang["spec"]["podgroups"]:
            found = await eventually(partial(live, api, podgroup(spec["name"]), namespace), bool)
            assert found["spec"]["minMember"] == spec["minReplicas"]
            notes = found["metadata"]["annotations"]
            assert json.loads(notes[GROUPS]) == [f"{namespace}/{n}" for n in names]
            assert notes[MODE] == "NonStrict"
            made[spec["name"]] = found
        synced = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "True"
        )
        assert f"GangGroup of {len(names)} gangs, NonStrict" in backend_synced(synced)["message"]

        # Someone deletes one gang: made again.
        await kube_of(api).request("DELETE", await resource_path(api, podgroup(WORKER), namespace))
        await eventually(
            lambda: live(api, podgroup(WORKER), namespace),
            lambda g: bool(g) and g["metadata"]["uid"] != made[WORKER]["metadata"]["uid"],
        )

        # A podgroup's minimum changes: its gang follows, in place.
        gang["spec"]["podgroups"][2]["minReplicas"] = 3
        await server_side_apply(api, gang, namespace)
        await eventually(
            lambda: live(api, podgroup(WORKER), namespace),
            lambda g: g["spec"]["minMember"] == 3,
        )

        member = gated_pod(namespace, f"{WORKER}-0", gang)
        created = await prepared_and_created(api, nc, subjects, KOORDINATOR, gang, member)
        assert created["spec"]["schedulerName"] == "koord-scheduler"
        assert created["metadata"]["labels"][POD_GROUP_LABEL] == WORKER
