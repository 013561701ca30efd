"""The scheduler section: every GREP-375 rule, one row each."""

from __future__ import annotations

from typing import Any

import pytest

from gangway_backend_kube.builtin import KubeSchedulerConfig
from gangway_contracts.codec import from_object
from gangway_contracts.config import load_operator_config, parse_scheduler_config
from gangway_contracts.errors import FieldErrors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.resources import backend_resources

ACCEPTED: list[tuple[str, Any, str, list[str]]] = [
    ("absent section", None, "default-scheduler", ["default-scheduler"]),
    ("no profiles", {"profiles": []}, "default-scheduler", ["default-scheduler"]),
    (
        "kai listed, nobody default",
        {"profiles": [{"name": "kai-scheduler"}]},
        "default-scheduler",
        ["default-scheduler", "kai-scheduler"],
    ),
    (
        "kai default",
        {"profiles": [{"name": "kai-scheduler", "default": True}]},
        "kai-scheduler",
        ["default-scheduler", "kai-scheduler"],
    ),
    (
        "kube-scheduler is an alias",
        {"profiles": [{"name": "kube-scheduler", "default": True}]},
        "default-scheduler",
        ["default-scheduler"],
    ),
    (
        "defaultProfileName form",
        {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "kai-scheduler"},
        "kai-scheduler",
        ["default-scheduler", "kai-scheduler"],
    ),
    (
        "defaultProfileName may name the always-enabled default-scheduler",
        {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "default-scheduler"},
        "default-scheduler",
        ["default-scheduler", "kai-scheduler"],
    ),
    (
        "third-party backend declared external",
        {"profiles": [{"name": "my-scheduler", "external": True, "default": True}]},
        "my-scheduler",
        ["default-scheduler", "my-scheduler"],
    ),
]


@pytest.mark.parametrize(
    ("section", "default", "enabled"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED]
)
def test_accepted(section: Any, default: str, enabled: list[str]) -> None:
    config = parse_scheduler_config(section)
    assert (config.default, config.enabled) == (default, enabled)


REJECTED: list[tuple[str, Any, list[str]]] = [
    (
        "unknown name lists the supported ones",
        {"profiles": [{"name": "kai"}]},
        [
            'scheduler.profiles[0].name: unknown scheduler "kai": supported are '
            "coscheduling, default-scheduler, kai-scheduler, koordinator, kube-scheduler, volcano; "
            "declare a "
            "third-party backend with external: true"
        ],
    ),
    (
        "two defaults",
        {
            "profiles": [
                {"name": "kai-scheduler", "default": True},
                {"name": "default-scheduler", "default": True},
            ]
        },
        [
            "scheduler.profiles: at most one profile may be default, found "
            "kai-scheduler (profiles[0].default), default-scheduler (profiles[1].default)"
        ],
    ),
    (
        "both default forms",
        {
            "profiles": [{"name": "kai-scheduler", "default": True}],
            "defaultProfileName": "kai-scheduler",
        },
        [
            "scheduler.defaultProfileName: set either defaultProfileName or a profile's "
            "default: true, not both (profiles[0].default is true)"
        ],
    ),
    (
        "defaultProfileName names nothing",
        {"profiles": [{"name": "kai-scheduler"}], "defaultProfileName": "volcano"},
        [
            'scheduler.defaultProfileName: "volcano" names no configured profile '
            "(configured: default-scheduler, kai-scheduler)"
        ],
    ),
    (
        "volcano's default queue must be a queue name; it has no timeout",
        {
            "profiles": [
                {
                    "name": "volcano",
                    "config": {"defaultQueue": "Team A", "scheduleTimeoutSeconds": 60},
                }
            ]
        },
        [
            "scheduler.profiles[0].config.defaultQueue: must be a DNS-1123 subdomain: the name "
            "of a Volcano Queue",
            "scheduler.profiles[0].config.scheduleTimeoutSeconds: unknown field",
        ],
    ),
    (
        "unknown key in a built-in backend's config",
        {"profiles": [{"name": "kai-scheduler", "config": {"queue": "a"}}]},
        ["scheduler.profiles[0].config.queue: unknown field"],
    ),
    (
        "gangScheduling must be a boolean",
        {"profiles": [{"name": "default-scheduler", "config": {"gangScheduling": "yes"}}]},
        [
            "scheduler.profiles[0].config.gangScheduling: Input should be a valid boolean, "
            "got a string"
        ],
    ),
    (
        "a built-in cannot be external",
        {"profiles": [{"name": "kai-scheduler", "external": True}]},
        [
            'scheduler.profiles[0].external: "kai-scheduler" is a built-in backend and cannot '
            "be external"
        ],
    ),
    (
        "external name must be a DNS label",
        {"profiles": [{"name": "My_Scheduler", "external": True}]},
        [
            'scheduler.profiles[0].name: "My_Scheduler" must be a DNS-1123 label: it is the '
            "pods' schedulerName and a NATS subject token"
        ],
    ),
    (
        "alias and canonical name both listed",
        {"profiles": [{"name": "default-scheduler"}, {"name": "kube-scheduler"}]},
        [
            'scheduler.profiles[1].name: "default-scheduler" is already configured at '
            "scheduler.profiles[0]"
        ],
    ),
    (
        "typo in a profile key",
        {"profiles": [{"name": "kai-scheduler", "defualt": True}]},
        ["scheduler.profiles[0].defualt: unknown field"],
    ),
    (
        "typo in the section",
        {"profile": []},
        ["scheduler.profile: unknown field"],
    ),
    (
        "a profile without a name",
        {"profiles": [{"name": "kai-scheduler"}, {"default": True}]},
        ["scheduler.profiles[1].name: required"],
    ),
    (
        "profiles must be a list",
        {"profiles": {"name": "kai-scheduler"}},
        ["scheduler.profiles: Input should be a valid list, got a mapping"],
    ),
    (
        "every problem is reported, not just the first",
        {"profiles": [{"name": "kai"}, {"name": "default-scheduler", "config": {"x": 1}}]},
        [
            'scheduler.profiles[0].name: unknown scheduler "kai": supported are '
            "coscheduling, default-scheduler, kai-scheduler, koordinator, kube-scheduler, volcano; "
            "declare a "
            "third-party backend with external: true",
            "scheduler.profiles[1].config.x: unknown field",
        ],
    ),
    (
        "an external backend's resources read <plural>.<group>/<version>",
        {"profiles": [{"name": "lpx-scheduler", "external": True, "resources": ["podgroups/v1"]}]},
        [
            'scheduler.profiles[0].resources[0]: "podgroups/v1" must read '
            "<plural>.<group>/<version>, e.g. podgroups.scheduling.example.com/v1"
        ],
    ),
    (
        "a built-in backend's resources are not configurable",
        {"profiles": [{"name": "kai-scheduler", "resources": ["x.y.z/v1"]}]},
        [
            'scheduler.profiles[0].resources: "kai-scheduler" is a built-in backend: '
            "its resources are known"
        ],
    ),
    (
        "coscheduling's options each name their field",
        {
            "profiles": [
                {
                    "name": "coscheduling",
                    "config": {
                        "schedulerName": "Gang_Scheduler",
                        "scheduleTimeoutSeconds": 0,
                        "permitWaitingTimeSeconds": 5,
                    },
                }
            ]
        },
        [
            "scheduler.profiles[0].config.schedulerName: must be a DNS-1123 label: the pods' "
            "schedulerName",
            "scheduler.profiles[0].config.scheduleTimeoutSeconds: Input should be greater than "
            "or equal to 1",
            "scheduler.profiles[0].config.permitWaitingTimeSeconds: unknown field",
        ],
    ),
    (
        "a schedulerName another profile's pods use",
        {
            "profiles": [
                {"name": "kai-scheduler"},
                {"name": "coscheduling", "config": {"schedulerName": "kai-scheduler"}},
            ]
        },
        [
            'scheduler.profiles[1].config.schedulerName: "kai-scheduler" is profile '
            "kai-scheduler's scheduler: pods naming it would belong to two backends"
        ],
    ),
]


@pytest.mark.parametrize(
    ("section", "errors"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_rejected(section: Any, errors: list[str]) -> None:
    with pytest.raises(FieldErrors) as caught:
        parse_scheduler_config(section)
    assert [str(e) for e in caught.value.errors] == errors


def test_typed_configs() -> None:
    config = parse_scheduler_config(
        {
            "profiles": [
                {"name": "default-scheduler", "config": {"gangScheduling": True}},
                {"name": "my-scheduler", "external": True, "config": {"anything": [1, 2]}},
            ]
        }
    )
    kube = config.builtin_config("default-scheduler", KubeSchedulerConfig)
    assert kube == KubeSchedulerConfig(gang_scheduling=True)
    assert config.profiles["my-scheduler"].config == {"anything": [1, 2]}


@pytest.mark.parametrize(
    ("pod_scheduler_name", "backend"),
    [
        (None, "kai-scheduler"),
        ("", "kai-scheduler"),
        ("kube-scheduler", "default-scheduler"),
        ("kai-scheduler", "kai-scheduler"),
        ("volcano", None),
    ],
)
def test_resolve(pod_scheduler_name: str | None, backend: str | None) -> None:
    config = parse_scheduler_config({"profiles": [{"name": "kai-scheduler", "default": True}]})
    assert config.resolve(pod_scheduler_name) == backend


@pytest.mark.parametrize(
    ("pod_scheduler_name", "backend"),
    [
        ("gangs", "coscheduling"),  # the scheduler's name, from the profile's config
        ("coscheduling", "coscheduling"),  # the profile's own name
        ("scheduler-plugins-scheduler", None),  # the default name, replaced
        (None, "default-scheduler"),
    ],
)
def test_resolve_by_a_profiles_scheduler_name(
    pod_scheduler_name: str | None, backend: str | None
) -> None:
    config = parse_scheduler_config(
        {"profiles": [{"name": "coscheduling", "config": {"schedulerName": "gangs"}}]}
    )
    assert config.resolve(pod_scheduler_name) == backend
    assert config.profiles["coscheduling"].scheduler_name == "gangs"


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("- a\n- b\n", "the configuration must be a YAML mapping"),
        ("scheduler: [\n", "not valid YAML"),
    ],
)
def test_operator_config_document(text: str, error: str) -> None:
    with pytest.raises(FieldErrors) as caught:
        load_operator_config(text)
    assert str(caught.value.errors[0]).startswith(error)


def test_a_missing_scheduler_section_means_default_scheduler_alone() -> None:
    """Grove's loader defaults it so; its own test configurations omit it."""
    for text in ("apiVersion: operator.config.grove.io/v1alpha1\n", ""):
        config = load_operator_config(text)
        assert (config.default, config.enabled) == ("default-scheduler", ["default-scheduler"])


def test_auto_mnnvl_is_refused_by_name() -> None:
    """Grove's loader takes it; Gangway would ignore it, so it says so instead."""
    with pytest.raises(FieldErrors) as caught:
        load_operator_config("network:\n  autoMNNVLEnabled: true\n")
    assert str(caught.value.errors[0]).startswith(
        "network.autoMNNVLEnabled: Gangway does not create ComputeDomains"
    )
    assert load_operator_config("network:\n  autoMNNVLEnabled: false\n").enabled == [
        "default-scheduler"
    ]


def pcs_with(*scheduler_names: str | None) -> PodCliqueSet:
    cliques = []
    for i, name in enumerate(scheduler_names):
        pod_spec: dict[str, Any] = {"containers": [{"name": "c", "image": "i"}]}
        if name is not None:
            pod_spec["schedulerName"] = name
        cliques.append({"name": f"c{i}", "spec": {"replicas": 1, "podSpec": pod_spec}})
    return from_object(
        {"metadata": {"name": "p"}, "spec": {"template": {"cliques": cliques}}}, PodCliqueSet
    )


@pytest.mark.parametrize(
    ("names", "backend"),
    [
        ((None, None), "kai-scheduler"),
        (("kube-scheduler", "default-scheduler"), "default-scheduler"),
        (("kai-scheduler",), "kai-scheduler"),
        ((None, "kai-scheduler"), "kai-scheduler"),  # unset: the default, the same one
    ],
)
def test_backend_for(names: tuple[str | None, ...], backend: str) -> None:
    config = parse_scheduler_config({"profiles": [{"name": "kai-scheduler", "default": True}]})
    assert config.backend_for(pcs_with(*names)) == backend


@pytest.mark.parametrize(
    ("names", "errors"),
    [
        (
            ("kai-scheduler", "default-scheduler"),
            [
                'spec.template.cliques[1].spec.podSpec.schedulerName: "default-scheduler" differs '
                'from "kai-scheduler" (spec.template.cliques[0]): one PodCliqueSet, one scheduler'
            ],
        ),
        (
            (None, "default-scheduler"),
            [
                "spec.template.cliques[0].spec.podSpec.schedulerName: unset (so the default, "
                '"kai-scheduler") while spec.template.cliques[1] names "default-scheduler": one '
                "PodCliqueSet, one scheduler"
            ],
        ),
        (
            ("volcano",),
            [
                'spec.template.cliques[0].spec.podSpec.schedulerName: "volcano" is not an enabled '
                "scheduler backend (enabled: default-scheduler, kai-scheduler)"
            ],
        ),
    ],
)
def test_backend_for_rejects(names: tuple[str | None, ...], errors: list[str]) -> None:
    config = parse_scheduler_config({"profiles": [{"name": "kai-scheduler", "default": True}]})
    with pytest.raises(FieldErrors) as caught:
        config.backend_for(pcs_with(*names))
    assert [str(e) for e in caught.value.errors] == errors


@pytest.mark.parametrize(
    ("section", "kinds"),
    [
        (None, []),
        ({"profiles": [{"name": "kai-scheduler"}]}, ["podgroups.scheduling.run.ai"]),
        ({"profiles": [{"name": "coscheduling"}]}, ["podgroups.scheduling.x-k8s.io"]),
        (
            {"profiles": [{"name": "default-scheduler", "config": {"gangScheduling": True}}]},
            [
                "workloads.scheduling.k8s.io",
                "podgroups.scheduling.k8s.io",
                "compositepodgroups.scheduling.k8s.io",
            ],
        ),
        (
            {"profiles": [{"name": "volcano"}]},
            ["podgroups.scheduling.volcano.sh", "queues.scheduling.volcano.sh"],
        ),
        (
            {
                "profiles": [
                    {
                        "name": "lpx-scheduler",
                        "external": True,
                        "resources": ["podgroups.scheduling.example.com/v1"],
                    }
                ]
            },
            ["podgroups.scheduling.example.com"],
        ),
    ],
)
def test_backend_resources(section: Any, kinds: list[str]) -> None:
    """What the watcher mirrors besides PodCliqueSets, PodGangs and pods, per backend."""
    found = backend_resources(parse_scheduler_config(section))
    assert [r.kind for r in found] == kinds
    assert all(r.backend for r in found)
    # Only the objects Gangway made; Volcano's queues are all read (a gang's quota).
    assert all(r.label_selector for r in found if r.kind != "queues.scheduling.volcano.sh")
