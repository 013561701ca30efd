"""What the API server would refuse of a PodCliqueSet's pods, the webhook refuses first:
podgang (which may create pods; the webhook may not) dry-runs one pod of each clique as it
would make it, and each refusal names the PodCliqueSet's field. Podgang away: refused
naming it, or admitted with a warning under failure policy Ignore."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_kube.backend import KubeBackend
from gangway_contracts.subjects import PodgangOperation, Subjects
from gangway_runtime.status import PODCLIQUESETS
from tests.integration.watcher.conftest import labelled
from tests.support.admission import create, patch, registered, running_admission
from tests.support.backends import running_backend
from tests.support.manifests import fixture, on_scheduler
from tests.support.podgang import pods, running_podgang
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": "default-scheduler", "default": True}]}
DENIED = 'admission webhook "podcliquesets.gangway.dev" denied the request: '
POD = "spec.template.cliques[0].spec.podSpec"

Change = Callable[[dict[str, Any]], None]


def _container(pod: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = pod["containers"][0]
    return found


# Each: how the clique's podSpec is broken, and what the webhook must say (field: words).
# None of these is among admission's own checks (docs/admission.md, step 2): only the API
# server's validation, reached through the dry run, finds them.
REFUSED: dict[str, tuple[Change, str]] = {
    "an image pull policy Kubernetes lacks": (
        lambda pod: _container(pod).update(imagePullPolicy="Sometimes"),
        f'{POD}.containers[0].imagePullPolicy: Unsupported value: "Sometimes"',
    ),
    "a volume with two sources": (
        lambda pod: pod.update(volumes=[{"name": "d", "emptyDir": {}, "configMap": {"name": "c"}}]),
        f"{POD}.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
    ),
    "a DNS policy Kubernetes lacks": (
        lambda pod: pod.update(dnsPolicy="Sometimes"),
        f'{POD}.dnsPolicy: Unsupported value: "Sometimes"',
    ),
    "a termination message policy Kubernetes lacks": (
        lambda pod: _container(pod).update(terminationMessagePolicy="Sometimes"),
        f'{POD}.containers[0].terminationMessagePolicy: Unsupported value: "Sometimes"',
    ),
    "a negative user id": (
        lambda pod: _container(pod).update(securityContext={"runAsUser": -1}),
        f"{POD}.containers[0].securityContext.runAsUser: Invalid value: -1",
    ),
    "an environment variable from two sources": (
        lambda pod: _container(pod)["env"].append(
            {
                "name": "WHO",
                "valueFrom": {
                    "fieldRef": {"fieldPath": "metadata.name"},
                    "configMapKeyRef": {"name": "c", "key": "k"},
                },
            }
        ),
        f'{POD}.containers[0].env[1].valueFrom: Invalid value: "": may not have more than one '
        "field specified at a time",
    ),
    "a pre-stop hook with nothing to do": (
        lambda pod: _container(pod).update(lifecycle={"preStop": {}}),
        f"{POD}.containers[0].lifecycle.preStop: Required value: must specify a handler type",
    ),
}


def _workload(namespace: str, name: str, change: Change | None = None) -> dict[str, Any]:
    doc = labelled(fixture("podcliquesets/single-clique.yaml"), namespace, name)
    on_scheduler(doc, "default-scheduler")
    if change is not None:
        change(doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"])
    return doc


async def test_what_the_api_server_refuses_of_the_pods_is_refused_naming_the_field(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    async with running_backend(api, nc, subjects, namespace, KubeBackend(False), CONFIG):
        async with (
            running_podgang(api, nc, subjects, namespace, CONFIG),
            running_admission(
                api, nc, subjects, CONFIG, tmp_path / "asks", dry_run_pods=True
            ) as admission,
            registered(api, admission, namespace),
        ):
            said = {
                case: await create(api, _workload(namespace, "broken", change), namespace, True)
                for case, (change, _) in REFUSED.items()
            }
            assert await create(api, _workload(namespace, "fine"), namespace) == ""
            # An update: its sample pods are named apart from the pods that exist.
            await eventually(partial(pods, api, namespace), lambda found: len(found) == 4)
            pull, _ = REFUSED["an image pull policy Kubernetes lacks"]
            changed = _workload(namespace, "fine", pull)["spec"]
            updated = await patch(api, PODCLIQUESETS.path(namespace, "fine"), {"spec": changed})
            # A pod the namespace's Pod Security level forbids (403, not 422): refused too.
            restricted = {"pod-security.kubernetes.io/enforce": "restricted"}
            await patch(
                api, f"/api/v1/namespaces/{namespace}", {"metadata": {"labels": restricted}}
            )
            # Pod Security reads the namespace's labels from the API server's cache: the level
            # holds a moment after the patch (the create is a dry run: try it again).
            privileged = _workload(namespace, "privileged")
            forbidden = await eventually(
                partial(create, api, privileged, namespace, True), lambda said: said != ""
            )
        # Without the dry run each of them is admitted: the PodCliqueSet would exist and
        # its pods would never be made.
        async with (
            running_admission(api, nc, subjects, CONFIG, tmp_path / "none") as admission,
            registered(api, admission, namespace),
        ):
            for change, _ in REFUSED.values():
                assert await create(api, _workload(namespace, "x", change), namespace, True) == ""
    for case, (_, words) in REFUSED.items():
        assert said[case].startswith(f"HTTP 422 Invalid: {DENIED}{words}"), (case, said[case])
    assert f"{DENIED}{POD}.containers[0].imagePullPolicy: Unsupported value" in updated, updated
    assert forbidden.startswith(f"HTTP 422 Invalid: {DENIED}{POD}: pods "), forbidden
    assert 'violates PodSecurity "restricted:latest"' in forbidden


async def test_podgang_away_is_refused_naming_it_unless_told_to_ignore(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, tmp_path: Path
) -> None:
    doc = _workload(namespace, "unchecked")
    async with running_backend(api, nc, subjects, namespace, KubeBackend(False), CONFIG):
        async with (
            running_admission(
                api, nc, subjects, CONFIG, tmp_path / "closed", dry_run_pods=True
            ) as admission,
            registered(api, admission, namespace),
        ):
            message = await create(api, doc, namespace, dry_run=True)
            subject = subjects.podgang(PodgangOperation.DRY_RUN_PODS)
            assert (
                f"{DENIED}podgang has no running replica ({subject}): cannot dry-run the "
                "PodCliqueSet's pods, try again" in message
            )
        async with (
            running_admission(
                api,
                nc,
                subjects,
                CONFIG,
                tmp_path / "open",
                dry_run_pods=True,
                failure_policy="Ignore",
            ) as admission,
            registered(api, admission, namespace),
        ):
            assert await create(api, doc, namespace, dry_run=True) == ""
