"""A backend whose durable consumer goes away (deleted, or a NATS node failing over) binds
again and goes on converging PodGangs: the process never ends on it."""

from __future__ import annotations

from functools import partial

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_coscheduling.backend import CoschedulingBackend
from gangway_backend_coscheduling.builtin import NAME as COSCHEDULING
from gangway_contracts.subjects import Subjects
from tests.support.backends import live, running_backend
from tests.support.coscheduling import CONFIG, base_gang, podgroup
from tests.support.kube import server_side_apply
from tests.support.store import eventually


async def test_a_deleted_consumer_is_bound_again_and_work_goes_on(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    backend = CoschedulingBackend()
    async with running_backend(api, nc, subjects, namespace, backend, CONFIG):
        js = nc.jetstream()
        durable = subjects.backend_service_name(COSCHEDULING)
        await js.delete_consumer(subjects.objects_stream, durable)
        await server_side_apply(api, base_gang(namespace), namespace)
        made = await eventually(partial(live, api, podgroup("llama-disagg-0"), namespace), bool)
        assert made["metadata"]["ownerReferences"][0]["kind"] == "PodGang"
        assert (await js.consumer_info(subjects.objects_stream, durable)).name == durable
