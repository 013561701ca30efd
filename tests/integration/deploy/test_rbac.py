"""Each service account of deploy/ can do exactly what its service needs, asked of the real
API server with SubjectAccessReviews over every (resource, verb) any of them touches and a
few they must not (Secrets, ConfigMaps, PodCliqueSets themselves)."""

from __future__ import annotations

import asyncio
import itertools
from typing import Final

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient

from tests.support.deploy import NAMESPACE, every_overlays_rbac, install_rbac

VERBS: Final = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")

LIST_WATCH: Final = frozenset({"list", "watch"})
WRITE: Final = frozenset({"get", "create", "update", "delete"})  # the backend kit's converge

# Service account → "group/resource[/subresource]" → the verbs it is granted, nothing more.
NEEDS: Final[dict[str, dict[str, frozenset[str]]]] = {
    "gangway-watcher": {
        "grove.io/podcliquesets": LIST_WATCH,
        "grove.io/clustertopologybindings": LIST_WATCH,
        "scheduler.grove.io/podgangs": LIST_WATCH,
        "/pods": LIST_WATCH,
        "scheduling.run.ai/podgroups": LIST_WATCH,
        "scheduling.k8s.io/workloads": LIST_WATCH,
        "scheduling.k8s.io/podgroups": LIST_WATCH,
        "scheduling.x-k8s.io/podgroups": LIST_WATCH,
        "scheduling.sigs.k8s.io/podgroups": LIST_WATCH,
        "scheduling.volcano.sh/podgroups": LIST_WATCH,
        "scheduling.volcano.sh/queues": LIST_WATCH,
        "kueue.x-k8s.io/workloads": LIST_WATCH,
    },
    "gangway-podgang": {
        "/pods": frozenset({"create", "patch", "delete"}),
        "scheduler.grove.io/podgangs": frozenset({"create", "patch", "delete"}),
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
        "grove.io/podcliquesets/status": frozenset({"get", "patch"}),
        "grove.io/podcliquesets/finalizers": frozenset({"update"}),
        "events.k8s.io/events": frozenset({"create"}),
    },
    "gangway-backend-kai": {
        "scheduling.run.ai/podgroups": WRITE,
        "scheduling.run.ai/queues": frozenset({"get"}),
        "kai.scheduler/topologies": WRITE,
        "scheduler.grove.io/podgangs": frozenset({"patch"}),
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-backend-coscheduling": {
        "scheduling.x-k8s.io/podgroups": WRITE,
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-backend-koordinator": {
        "scheduling.sigs.k8s.io/podgroups": WRITE,
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-backend-volcano": {
        "scheduling.volcano.sh/podgroups": WRITE,
        "scheduling.volcano.sh/queues": frozenset({"get"}),
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-backend-kube": {
        "scheduling.k8s.io/workloads": WRITE,
        "scheduling.k8s.io/podgroups": WRITE,
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-stage-kueue": {
        # kueue-topology's: the domain Kueue chose, on a gated pod; a stale one made again.
        "/pods": frozenset({"patch", "delete"}),
        "kueue.x-k8s.io/workloads": WRITE,
        "kueue.x-k8s.io/workloads/status": frozenset({"patch"}),
        "scheduling.k8s.io/priorityclasses": frozenset({"get"}),
        "scheduler.grove.io/podgangs/status": frozenset({"get", "patch"}),
        "scheduler.grove.io/podgangs/finalizers": frozenset({"update"}),
    },
    "gangway-admission": {"grove.io/clustertopologybindings": frozenset({"get"})},
    # Secrets by name only (checked below); create cannot be limited by name.
    "gangway-setup": {"/secrets": frozenset({"create"})},
    "gangway-webhook-cert": {"/secrets": frozenset({"create"})},
    "gangway-nats": {},
}
# Resources nobody may touch at all, asked too so that "exactly" means something.
FORBIDDEN: Final = (
    "/configmaps",
    "grove.io/podcliquesets/scale",
    "admissionregistration.k8s.io/validatingwebhookconfigurations",
    "apps/deployments",
)
RESOURCES: Final = sorted({r for needs in NEEDS.values() for r in needs} | {"/secrets", *FORBIDDEN})


def _attributes(
    resource: str, verb: str, namespace: str, name: str = ""
) -> client.V1ResourceAttributes:
    group, _, rest = resource.partition("/")
    plural, _, subresource = rest.partition("/")
    return client.V1ResourceAttributes(
        group=group,
        resource=plural,
        subresource=subresource,
        verb=verb,
        namespace=namespace,
        name=name,
    )


async def allowed(api: ApiClient, account: str, attributes: client.V1ResourceAttributes) -> bool:
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{NAMESPACE}:{account}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"],
            resource_attributes=attributes,
        )
    )
    answer = await client.AuthorizationV1Api(api).create_subject_access_review(review)
    return bool(answer.status.allowed)


async def test_each_service_account_can_do_exactly_what_its_service_needs(
    api: ApiClient,
) -> None:
    await install_rbac(api)
    accounts = {
        d["metadata"]["name"] for d in every_overlays_rbac() if d["kind"] == "ServiceAccount"
    }
    assert accounts == set(NEEDS)
    cells = list(itertools.product(sorted(NEEDS), RESOURCES, VERBS))
    limit = asyncio.Semaphore(32)

    async def ask(account: str, resource: str, verb: str) -> bool:
        async with limit:
            return await allowed(api, account, _attributes(resource, verb, NAMESPACE))

    answers = await asyncio.gather(*(ask(*cell) for cell in cells))
    granted = {(a, r, v) for (a, r, v), yes in zip(cells, answers, strict=True) if yes}
    expected = {(a, r, v) for a, needs in NEEDS.items() for r, vs in needs.items() for v in vs}
    assert sorted(granted - expected) == [], "granted beyond need"
    assert sorted(expected - granted) == [], "needed but not granted"


@pytest.mark.parametrize(
    ("account", "secret"),
    [("gangway-setup", "gangway-nats-users"), ("gangway-webhook-cert", "gangway-admission")],
)
async def test_setup_jobs_read_and_change_their_own_secret_only(
    api: ApiClient, account: str, secret: str
) -> None:
    await install_rbac(api)
    for verb in ("get", "patch"):
        assert await allowed(api, account, _attributes("/secrets", verb, NAMESPACE, secret))
        other = _attributes("/secrets", verb, NAMESPACE, "gangway-nats-users-not")
        assert not await allowed(api, account, other)
    assert not await allowed(api, account, _attributes("/secrets", "create", "default"))


async def test_only_the_webhook_cert_job_may_update_the_webhook_configuration(
    api: ApiClient,
) -> None:
    await install_rbac(api)
    resource = "admissionregistration.k8s.io/validatingwebhookconfigurations"
    for verb in ("get", "update"):
        ours = _attributes(resource, verb, "", "gangway-admission")
        assert await allowed(api, "gangway-webhook-cert", ours)
        assert not await allowed(api, "gangway-admission", ours)
        other = _attributes(resource, verb, "", "someone-elses")
        assert not await allowed(api, "gangway-webhook-cert", other)


async def test_a_backend_cannot_touch_another_backends_objects(api: ApiClient) -> None:
    await install_rbac(api)
    for verb in VERBS:
        kai = _attributes("scheduling.run.ai/podgroups", verb, "tenant")
        assert not await allowed(api, "gangway-backend-kube", kai), verb
        for plural in ("workloads", "podgroups", "compositepodgroups"):
            kube = _attributes(f"scheduling.k8s.io/{plural}", verb, "tenant")
            assert not await allowed(api, "gangway-backend-kai", kube), verb
            assert not await allowed(api, "gangway-backend-coscheduling", kube), verb
        # Each PodGroup kind is its own backend's alone.
        podgroups = {
            "gangway-backend-coscheduling": "scheduling.x-k8s.io/podgroups",
            "gangway-backend-koordinator": "scheduling.sigs.k8s.io/podgroups",
            "gangway-backend-kai": "scheduling.run.ai/podgroups",
            "gangway-backend-volcano": "scheduling.volcano.sh/podgroups",
        }
        for owner, resource in podgroups.items():
            for other in set(podgroups) - {owner} | {"gangway-backend-kube"}:
                attributes = _attributes(resource, verb, "tenant")
                assert not await allowed(api, other, attributes), (other, resource, verb)
