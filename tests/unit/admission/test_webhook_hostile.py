"""Whatever is sent, the webhook answers (200 with an AdmissionReview, 400 for what is not
one, 413 for what is too large) and keeps serving; a backend that hangs still gets the
client an answer once the review's time is up. A real HTTP server, in this process."""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Iterator, Sequence
from typing import Any

import aiohttp
import pytest
from aiohttp.test_utils import TestServer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from gangway_admission.verdict import Policy
from gangway_admission.webhook import PATH, Webhook
from gangway_cli.backends import builtin_backend
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.events import AdmissionRejected
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from tests.support.manifests import fixture

CONFIG = parse_scheduler_config({"profiles": [{"name": "kai-scheduler", "default": True}]})
MAX_BYTES = 256 << 10
REVIEW_TIMEOUT = 0.5

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=40,
)


def review(obj: Any, operation: str = "CREATE", old: Any = None) -> dict[str, Any]:
    request: dict[str, Any] = {"uid": "u-1", "operation": operation, "object": obj}
    if old is not None:
        request["oldObject"] = old
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request}


def paths(doc: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield here
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from paths(value, (*here, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from paths(value, (*here, i))


PCS = fixture("podcliquesets/disaggregated-inference.yaml")
PCS["spec"]["template"]["topologyConstraint"]["topologyName"] = "datacenter"  # KAI needs it
PCS_PATHS = list(paths(PCS))[1:]


@st.composite
def mutated_podcliquesets(draw: st.DrawFn) -> dict[str, Any]:
    """The inference fixture with a few fields swapped for arbitrary JSON."""
    doc = copy.deepcopy(PCS)
    for path in draw(st.lists(st.sampled_from(PCS_PATHS), min_size=1, max_size=3)):
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            parent[path[-1]] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue  # an earlier swap removed the path
    return doc


class Harness:
    def __init__(self, hang: bool = False) -> None:
        self.hang = hang
        self.journal: list[AdmissionRejected] = []
        self.webhook = Webhook(
            CONFIG,
            self.ask,
            self.levels,
            self.record,
            policy=Policy(),
            review_timeout=REVIEW_TIMEOUT,
            service="test",
        )

    async def ask(self, backend: str, request: ValidateRequest) -> ValidateReply:
        if self.hang:
            await asyncio.Event().wait()
        return await builtin_backend(backend, CONFIG).validate_podcliqueset(request, None)

    async def levels(self, _: PodCliqueSet) -> tuple[Sequence[str] | None, str | None]:
        return None, None

    async def record(self, event: AdmissionRejected) -> None:
        self.journal.append(event)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[asyncio.Runner, TestServer, aiohttp.ClientSession, Harness]]:
    harness = Harness()
    with asyncio.Runner() as runner:
        server = TestServer(harness.webhook.app(MAX_BYTES))
        runner.run(server.start_server())
        session = runner.run(_session())
        yield runner, server, session, harness
        runner.run(session.close())
        runner.run(server.close())


async def _session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))


def post(
    served: tuple[asyncio.Runner, TestServer, aiohttp.ClientSession, Harness], body: bytes
) -> tuple[int, bytes]:
    runner, server, session, _ = served

    async def go() -> tuple[int, bytes]:
        async with session.post(server.make_url(PATH), data=body) as response:
            return response.status, await response.read()

    return runner.run(go())


def answered(status: int, body: bytes) -> dict[str, Any]:
    assert status == 200, body[:300]
    answer = json.loads(body)["response"]
    assert answer["uid"] == "u-1"
    if not answer["allowed"]:
        assert answer["status"]["message"]
    return answer  # type: ignore[no-any-return]


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.binary(max_size=2000) | json_values.map(lambda v: json.dumps(v).encode()))
def test_anything_not_a_review_is_a_400(served: Any, body: bytes) -> None:
    status, _ = post(served, body)
    assert status in (200, 400)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(json_values)
def test_any_object_is_answered(served: Any, obj: Any) -> None:
    answered(*post(served, json.dumps(review(obj)).encode()))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(mutated_podcliquesets(), st.sampled_from(["CREATE", "UPDATE"]))
def test_damaged_podcliquesets_are_answered(served: Any, doc: Any, operation: str) -> None:
    old = PCS if operation == "UPDATE" else None
    answered(*post(served, json.dumps(review(doc, operation, old)).encode()))


def test_deep_nesting_is_rejected_naming_the_object(served: Any) -> None:
    deep = "[" * 20_000 + "]" * 20_000
    body = json.dumps(review(None)).replace('"object": null', f'"object": {deep}').encode()
    answer = answered(*post(served, body))
    assert not answer["allowed"]
    deep_spec = json.dumps(review(copy.deepcopy(PCS))).replace(
        '"podSpec": {', f'"podSpec": {{"x": {deep}, ', 1
    )
    assert not answered(*post(served, deep_spec.encode()))["allowed"]
    assert answered(*post(served, json.dumps(review(PCS)).encode()))["allowed"]  # still serving


def test_oversized_body_is_refused_unread(served: Any) -> None:
    doc = copy.deepcopy(PCS)
    doc["metadata"]["annotations"] = {"big": "x" * MAX_BYTES}
    status, _ = post(served, json.dumps(review(doc)).encode())
    assert status == 413


def test_rejections_are_journaled_but_dry_runs_are_not(served: Any) -> None:
    harness: Harness = served[3]
    doc = copy.deepcopy(PCS)
    doc["spec"]["template"]["cliques"][0]["name"] = "Router"
    before = len(harness.journal)
    labels = {"operation": "CREATE", "result": "rejected", "reason": "Invalid"}
    counted = REGISTRY.get_sample_value("gangway_admission_reviews_total", labels) or 0
    body = review(doc)
    body["request"].update(namespace="inference", name="llama-disagg")
    answered(*post(served, json.dumps(body).encode()))
    assert len(harness.journal) == before + 1
    assert REGISTRY.get_sample_value("gangway_admission_reviews_total", labels) == counted + 1
    event = harness.journal[-1]
    assert (event.workload.namespace, event.workload.name, event.operation) == (
        "inference",
        "llama-disagg",
        "CREATE",
    )
    body["request"]["dryRun"] = True
    answered(*post(served, json.dumps(body).encode()))
    assert len(harness.journal) == before + 1


def test_a_hanging_backend_still_gets_an_answer_in_time() -> None:
    harness = Harness(hang=True)

    async def scenario() -> dict[str, Any]:
        body = json.dumps(review(PCS)).encode()
        # The outer timeout only fails the test instead of hanging it; the review's own
        # timeout is what answers.
        async with (
            asyncio.timeout(REVIEW_TIMEOUT * 20),
            TestServer(harness.webhook.app(MAX_BYTES)) as server,
            aiohttp.ClientSession() as session,
            session.post(server.make_url(PATH), data=body) as response,
        ):
            return answered(response.status, await response.read())

    answer = asyncio.run(scenario())
    assert not answer["allowed"]
    assert answer["status"]["message"] == (
        f"admission did not finish within {REVIEW_TIMEOUT:g}s, try again"
    )
