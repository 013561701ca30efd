"""The ``scheduler`` section of the operator configuration (GREP-375), read with pydantic.

    scheduler:
      profiles:
        - name: kai-scheduler
        - name: coscheduling          # scheduler-plugins' Coscheduling, a second scheduler
          config: {schedulerName: scheduler-plugins-scheduler, scheduleTimeoutSeconds: 60}
        - name: koordinator           # Koordinator's koord-scheduler (gangs, GangGroups)
          config: {mode: Strict, matchPolicy: once-satisfied}
        - name: volcano               # Volcano's vc-scheduler (PodGroups in queues)
          config: {defaultQueue: default}
        - name: default-scheduler
          config: {gangScheduling: true}
          default: true
        - name: my-scheduler          # a third-party backend, enabled by declaring it
          external: true
          resources: [podgroups.scheduling.example.com/v1]   # what the watcher mirrors for it
      # or, Grove's later form instead of `default: true`:
      # defaultProfileName: kai-scheduler
    kueue:
      enabled: true                   # Kueue admits gangs against quota first (docs/backends.md)
      topology: true                  # and picks their topology domains (its TAS; docs/kueue.md)

Rules: ``default-scheduler`` (alias ``kube-scheduler``) is always enabled; at most one
default (none: default-scheduler); built-in backends get typed configuration, unknown keys
rejected; anything else must be declared ``external``. Every error names its field path.
A pod's ``schedulerName`` picks its backend by profile name, or by the ``schedulerName`` a
profile's config gives (coscheduling, koordinator, volcano: their schedulers may be named
otherwise).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final, TypeVar

import msgspec
import yaml
from pydantic import BaseModel, ValidationError

from gangway_contracts.backend_config import BackendConfig, NamedSchedulerConfig, Written
from gangway_contracts.builtin import builtin, builtin_backends
from gangway_contracts.errors import FieldError, FieldErrors, field_path, pydantic_errors
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import is_dns_label

M = TypeVar("M", bound="BackendConfig")
W = TypeVar("W", bound=BaseModel)

# Kubernetes' own scheduler: the profile used when a configuration names no default.
DEFAULT_SCHEDULER: Final = "default-scheduler"


def aliases() -> dict[str, str]:
    """Other names of the built-in backends (kube-scheduler → default-scheduler)."""
    return {alias: b.name for b in builtin_backends().values() for alias in b.aliases}


def canonical_name(name: str) -> str:
    """The backend a scheduler name means: aliases resolved (kube-scheduler → default)."""
    return aliases().get(name, name)


# "<plural>.<group>/<version>": a resource of an API group (never core), at one version.
RESOURCE_REF: Final = re.compile(
    r"^(?P<plural>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<group>[a-z0-9]([-a-z0-9.]*[a-z0-9])?)"
    r"/(?P<version>v[0-9]+((alpha|beta)[0-9]+)?)$"
)


# Profile names Grove's operator configuration takes that Gangway provides no backend for.
GROVE_ONLY_BACKENDS: Final = {"lpx-scheduler": "Grove's LPX scheduler backend"}


class _Profile(Written):
    """A profile as written; the rules that span profiles are checked afterwards."""

    name: str
    config: dict[str, Any] | None = None
    default: bool = False
    external: bool = False
    # The watcher mirrors these for an external backend: "<plural>.<group>/<version>".
    resources: list[str] = []


class _KueueSection(Written):
    enabled: bool = False
    topology: bool = False


class _SchedulerSection(Written):
    profiles: list[_Profile] = []
    default_profile_name: str | None = None


def read_written(kind: type[W], data: Any, *at: str | int) -> W:
    """``data`` as a ``kind``; FieldErrors naming every field at fault under ``at``."""
    try:
        return kind.model_validate(data)
    except ValidationError as exc:
        raise FieldErrors(pydantic_errors(exc, *at)) from None


@dataclass(frozen=True)
class Profile:
    """One enabled backend, resolved: canonical name and typed (or passed-through) config."""

    name: str
    external: bool = False
    config: BackendConfig | dict[str, Any] = field(default_factory=dict)
    resources: tuple[str, ...] = ()  # an external backend's own resources, to be mirrored

    @property
    def scheduler_name(self) -> str:
        """The schedulerName its pods get: its config's, else the profile's name."""
        if isinstance(self.config, NamedSchedulerConfig):
            return self.config.scheduler_name
        return self.name


@dataclass(frozen=True)
class SchedulerConfig:
    """The resolved scheduler configuration every service reads."""

    default: str
    profiles: dict[str, Profile]
    # Kueue admits the gangs of PodCliqueSets that name a LocalQueue before their gates lift
    # (``gangway_contracts.kueue``); the operator configuration's ``kueue.enabled``.
    kueue: bool = False
    # Kueue also picks each gang's topology domains (its topology-aware scheduling), written
    # on the pods before their gates lift; ``kueue.topology``: every ClusterQueue behind a
    # LocalQueue that PodCliqueSets name has flavors with a Kueue Topology.
    kueue_topology: bool = False

    @property
    def enabled(self) -> list[str]:
        return sorted(self.profiles)

    def resolve(self, scheduler_name: str | None) -> str | None:
        """Backend for a pod's schedulerName (None/empty → default); None if not enabled."""
        if not scheduler_name:
            return self.default
        name = canonical_name(scheduler_name)
        if name in self.profiles:
            return name
        by_scheduler = (p.name for p in self.profiles.values() if p.scheduler_name == name)
        return next(by_scheduler, None)

    def backend_for(self, pcs: PodCliqueSet) -> str:
        """The backend that owns a PodCliqueSet's gangs, from its cliques' schedulerName.

        All unset → the default profile; otherwise all must agree (an unset one meaning the
        default) and name an enabled backend. Raises FieldErrors naming the clique that
        disagrees or the unknown name.
        """
        names = [
            (i, scheduler_name_of(c.spec.pod_spec)) for i, c in enumerate(pcs.spec.template.cliques)
        ]
        named = [(i, n) for i, n in names if n]
        if not named:
            return self.default
        first_index, first = named[0]
        errors = []
        for i, name in named[1:]:
            if canonical_name(name) != canonical_name(first):
                errors.append(
                    FieldError(
                        field=field_path(*_POD_SPEC(i), "schedulerName"),
                        reason=f'"{name}" differs from "{first}" '
                        f"(spec.template.cliques[{first_index}]): one PodCliqueSet, one scheduler",
                    )
                )
        backend = self.resolve(first)
        # An unset clique takes the default backend: fine when the named one is it.
        if len(named) != len(names) and backend is not None and backend != self.default:
            unset = next(i for i, n in names if not n)
            errors.append(
                FieldError(
                    field=field_path(*_POD_SPEC(unset), "schedulerName"),
                    reason=f'unset (so the default, "{self.default}") while '
                    f'spec.template.cliques[{first_index}] names "{first}": one PodCliqueSet, '
                    "one scheduler",
                )
            )
        if backend is None:
            errors.append(
                FieldError(
                    field=field_path(*_POD_SPEC(first_index), "schedulerName"),
                    reason=f'"{first}" is not an enabled scheduler backend '
                    f"(enabled: {', '.join(self.enabled)})",
                )
            )
        if errors:
            raise FieldErrors(errors)
        assert backend is not None
        return backend

    def builtin_config(self, name: str, model: type[M]) -> M | None:
        """A built-in backend's typed configuration, None when its profile is not enabled."""
        profile = self.profiles.get(name)
        return profile.config if profile and isinstance(profile.config, model) else None


class _SchedulerNameOnly(msgspec.Struct, rename="camel"):
    scheduler_name: str | None = None


def scheduler_name_of(pod_spec: msgspec.Raw) -> str | None:
    """A raw podSpec's schedulerName, decoding nothing else of it."""
    return msgspec.json.decode(pod_spec, type=_SchedulerNameOnly).scheduler_name


def _POD_SPEC(i: int) -> tuple[str | int, ...]:  # noqa: N802 - reads as a path constant
    return ("spec", "template", "cliques", i, "spec", "podSpec")


def _resolve_external(at: tuple[str, str, int], p: _Profile) -> Profile | list[FieldError]:
    """A third-party backend: a DNS-1123 name and the resources the watcher mirrors for it."""
    name = canonical_name(p.name)
    if name in builtin_backends():
        reason = f'"{p.name}" is a built-in backend and cannot be external'
        return [FieldError(field=field_path(*at, "external"), reason=reason)]
    if not is_dns_label(name):
        reason = (
            f'"{p.name}" must be a DNS-1123 label: it is the pods\' schedulerName '
            "and a NATS subject token"
        )
        return [FieldError(field=field_path(*at, "name"), reason=reason)]
    bad = [
        FieldError(
            field=field_path(*at, "resources", j),
            reason=f'"{ref}" must read <plural>.<group>/<version>, '
            "e.g. podgroups.scheduling.example.com/v1",
        )
        for j, ref in enumerate(p.resources)
        if not RESOURCE_REF.match(ref)
    ]
    if bad:
        return bad
    return Profile(
        name=name, external=True, config=dict(p.config or {}), resources=tuple(p.resources)
    )


def _resolve_profile(i: int, p: _Profile) -> Profile | list[FieldError]:
    """One profile as written → its canonical name and typed configuration."""
    at = ("scheduler", "profiles", i)
    if p.external:
        return _resolve_external(at, p)
    name = canonical_name(p.name)
    table = builtin_backends()
    if name not in table:
        supported = ", ".join(sorted([*table, *aliases()]))
        known = GROVE_ONLY_BACKENDS.get(name)
        reason = (
            f'"{p.name}" is {known}, which Gangway has no backend for (supported are '
            f"{supported}): Grove's operator can run it, or a backend of your own declared "
            "with external: true"
            if known
            else f'unknown scheduler "{p.name}": supported are {supported}; '
            "declare a third-party backend with external: true"
        )
        return [FieldError(field=field_path(*at, "name"), reason=reason)]
    if p.resources:
        reason = f'"{p.name}" is a built-in backend: its resources are known'
        return [FieldError(field=field_path(*at, "resources"), reason=reason)]
    try:
        config = read_written(table[name].config, p.config or {}, *at, "config")
    except FieldErrors as exc:
        return list(exc.errors)
    return Profile(name=name, config=config)


def _resolve_default(
    raw: _SchedulerSection, profiles: dict[str, Profile], index: dict[str, int]
) -> str | FieldError:
    """The default backend: a profile's ``default: true``, or defaultProfileName, or none."""
    defaults = [n for n, i in index.items() if raw.profiles[i].default]
    if len(defaults) > 1:
        found = ", ".join(f"{n} (profiles[{index[n]}].default)" for n in defaults)
        reason = f"at most one profile may be default, found {found}"
        return FieldError(field="scheduler.profiles", reason=reason)
    if raw.default_profile_name is None:
        return defaults[0] if defaults else DEFAULT_SCHEDULER
    where = "scheduler.defaultProfileName"
    if defaults:
        reason = (
            "set either defaultProfileName or a profile's default: true, not both "
            f"(profiles[{index[defaults[0]]}].default is true)"
        )
        return FieldError(field=where, reason=reason)
    named = canonical_name(raw.default_profile_name)
    if named not in profiles:
        reason = (
            f'"{raw.default_profile_name}" names no configured profile '
            f"(configured: {', '.join(sorted(profiles))})"
        )
        return FieldError(field=where, reason=reason)
    return named


def _scheduler_name_clashes(
    profiles: dict[str, Profile], index: dict[str, int]
) -> list[FieldError]:
    """A schedulerName of a profile's config must not be another profile's: a pod naming it
    would belong to two backends."""
    errors = []
    for name, profile in profiles.items():
        own = profile.scheduler_name
        if own == name:
            continue
        clash = canonical_name(own) if canonical_name(own) in profiles else None
        clash = clash or next(
            (n for n, p in profiles.items() if n != name and p.scheduler_name == own), None
        )
        if clash is not None:
            errors.append(
                FieldError(
                    field=f"scheduler.profiles[{index[name]}].config.schedulerName",
                    reason=f'"{own}" is profile {clash}\'s scheduler: pods naming it would '
                    "belong to two backends",
                )
            )
    return errors


def parse_scheduler_config(section: Any) -> SchedulerConfig:
    """Validate the ``scheduler`` section; raise FieldErrors listing every problem."""
    raw = read_written(_SchedulerSection, {} if section is None else section, "scheduler")

    errors: list[FieldError] = []
    profiles: dict[str, Profile] = {}
    index: dict[str, int] = {}  # canonical name → where it was configured
    for i, written in enumerate(raw.profiles):
        resolved = _resolve_profile(i, written)
        if isinstance(resolved, list):
            errors.extend(resolved)
        elif resolved.name in profiles:
            reason = (
                f'"{resolved.name}" is already configured at '
                f"scheduler.profiles[{index[resolved.name]}]"
            )
            errors.append(FieldError(field=f"scheduler.profiles[{i}].name", reason=reason))
        else:
            profiles[resolved.name] = resolved
            index[resolved.name] = i

    # default-scheduler is always enabled (GREP-375), listed or not.
    profiles.setdefault(
        DEFAULT_SCHEDULER,
        Profile(name=DEFAULT_SCHEDULER, config=builtin(DEFAULT_SCHEDULER).config()),
    )
    errors += _scheduler_name_clashes(profiles, index)
    default = _resolve_default(raw, profiles, index)
    if isinstance(default, FieldError):
        errors.append(default)
    if errors:
        raise FieldErrors(errors)
    assert isinstance(default, str)
    return SchedulerConfig(default=default, profiles=profiles)


def load_operator_config(text: str) -> SchedulerConfig:
    """Read an operator configuration YAML document and validate its ``scheduler`` section
    (absent: default-scheduler alone, as Grove's loader defaults it)."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise FieldErrors([FieldError(field="", reason=f"not valid YAML: {exc}")]) from None
    if document is None:
        document = {}
    if not isinstance(document, Mapping):
        raise FieldErrors([FieldError(field="", reason="the configuration must be a YAML mapping")])
    network = document.get("network")
    if isinstance(network, Mapping) and network.get("autoMNNVLEnabled") is True:
        reason = (
            "Gangway does not create ComputeDomains (Grove's auto-MNNVL): set it to false, "
            "or keep Grove's operator for workloads that need it"
        )
        raise FieldErrors([FieldError(field="network.autoMNNVLEnabled", reason=reason)])
    # Grove's loader defaults a missing section to the Kubernetes default scheduler alone.
    config = parse_scheduler_config(document.get("scheduler"))
    kueue = read_written(_KueueSection, document.get("kueue") or {}, "kueue")
    if kueue.topology and not kueue.enabled:
        reason = "Kueue's topology assignment needs Kueue in front: set kueue.enabled: true"
        raise FieldErrors([FieldError(field="kueue.topology", reason=reason)])
    return replace(config, kueue=kueue.enabled, kueue_topology=kueue.topology)
