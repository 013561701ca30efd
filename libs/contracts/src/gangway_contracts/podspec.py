"""What the API server would refuse in a pod made from a clique's podSpec, found before any
pod exists.

A PodCliqueSet is stored with its cliques' podSpecs as they were written; the pods are made
later, by podgang, and a podSpec the API server refuses would then fail every pod of the
workload, a minute after admission, with nothing on the PodCliqueSet. So admission (and
``gangway validate``) checks the podSpec the way kube-apiserver's pod validation does for
the mistakes people make: a missing podSpec, no container, a container without a name or
image, names that clash or are not DNS labels, a quantity that does not parse or a request
above its limit, a port out of range, a mount of a volume that is not there, a restart policy
that does not exist, an environment variable name the API server refuses, a nodeName (never
allowed beside the scheduling gate every Gangway pod is made with). The messages follow the
API server's ("Required value", "Invalid value", "Duplicate value", "Not found",
"Unsupported value", "Forbidden").

Not everything the API server checks is here (it has hundreds of rules); what is not caught
here is refused when podgang makes the pod, and said on the PodCliqueSet.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from decimal import Decimal, InvalidOperation
from typing import Final

import msgspec

from gangway_contracts.codec import MALFORMED
from gangway_contracts.errors import FieldError, field_path, validation_error
from gangway_contracts.k8s import is_dns_label

_RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
_PROTOCOLS: Final = ("TCP", "UDP", "SCTP")
# apimachinery's resource.Quantity: a signed decimal number, then a binary (Ki…Ei) or
# decimal (n u m k M G T P E) suffix or a decimal exponent.
_QUANTITY: Final = re.compile(
    r"^(?P<number>[+-]?(?:\d+\.?\d*|\.\d+))(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?\d+)?$"
)
_BINARY: Final = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL: Final = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}

Quantity = str | int | float


class _View(msgspec.Struct, rename="camel", forbid_unknown_fields=False):
    pass


class _Port(_View, kw_only=True):
    container_port: int = 0
    protocol: str = "TCP"


class _Resources(_View, kw_only=True):
    requests: dict[str, Quantity] = {}
    limits: dict[str, Quantity] = {}


class _Mount(_View, kw_only=True):
    name: str = ""


class _Env(_View, kw_only=True):
    name: str = ""


class _Container(_View, kw_only=True):
    name: str = ""
    image: str = ""
    restart_policy: str | None = None  # "Always" on an init container: a sidecar
    ports: list[_Port] = []
    resources: _Resources = msgspec.field(default_factory=_Resources)
    volume_mounts: list[_Mount] = []
    env: list[_Env] = []


class _Volume(_View, kw_only=True):
    name: str = ""


class _PodSpec(_View, kw_only=True):
    containers: list[_Container] = []
    init_containers: list[_Container] = []
    volumes: list[_Volume] = []
    restart_policy: str | None = None
    node_name: str = ""
    overhead: dict[str, Quantity] = {}


def quantity(value: Quantity) -> Decimal | None:
    """A resource quantity's value (``500m`` → 0.5, ``1Gi`` → 1073741824), or None when it
    is not one."""
    match = _QUANTITY.match(str(value)) if not isinstance(value, bool) else None
    if match is None:
        return None
    try:
        number = Decimal(match["number"])
    except InvalidOperation:
        return None
    suffix = match["suffix"] or ""
    if suffix in _BINARY:
        return number * (1 << (10 * _BINARY[suffix]))
    if suffix in _DECIMAL:
        return number.scaleb(_DECIMAL[suffix])
    return number.scaleb(int(suffix[1:])) if suffix else number


def pod_spec_errors(raw: bytes, where: str) -> list[FieldError]:
    """Every problem of one clique's podSpec (``raw``, its JSON; empty or null when the
    clique has none), each at its path under ``where``."""
    if raw.strip() in (b"", b"null"):
        return [
            FieldError(field=where, reason="Required value: the clique's pods are made from it")
        ]
    try:
        spec = msgspec.json.decode(raw, type=_PodSpec)
    except MALFORMED as exc:
        error = validation_error(exc) if isinstance(exc, msgspec.ValidationError) else None
        inner = error.field if error else ""
        return [
            FieldError(
                field=f"{where}.{inner}" if inner else where,
                reason=error.reason if error else str(exc),
            )
        ]
    return list(_spec(spec, where))


def _spec(spec: _PodSpec, where: str) -> Iterator[FieldError]:
    if not spec.containers:
        yield FieldError(field=f"{where}.containers", reason="Required value: at least one")
    if spec.restart_policy is not None and spec.restart_policy not in _RESTART_POLICIES:
        yield FieldError(
            field=f"{where}.restartPolicy",
            reason=f'Unsupported value: "{spec.restart_policy}": supported values: '
            + ", ".join(f'"{p}"' for p in _RESTART_POLICIES),
        )
    if spec.node_name:
        yield FieldError(
            field=f"{where}.nodeName",
            reason=f'Forbidden: "{spec.node_name}": a gang\'s pods are placed by its scheduler '
            "(and made behind a scheduling gate, which the API server refuses beside nodeName)",
        )
    volumes = {volume.name for volume in spec.volumes}
    seen: set[str] = set()
    for kind, containers in (
        ("initContainers", spec.init_containers),
        ("containers", spec.containers),
    ):
        for i, container in enumerate(containers):
            at = field_path(where, kind, i)
            yield from _container(container, at, volumes)
            if container.name and container.name in seen:
                yield FieldError(field=f"{at}.name", reason=f'Duplicate value: "{container.name}"')
            seen.add(container.name)


def _container(container: _Container, at: str, volumes: set[str]) -> Iterator[FieldError]:
    if not container.name:
        yield FieldError(field=f"{at}.name", reason="Required value")
    elif not is_dns_label(container.name):
        yield FieldError(
            field=f"{at}.name",
            reason=f'Invalid value: "{container.name}": must be a DNS label (lower case '
            "letters, digits and '-', at most 63 characters)",
        )
    if not container.image.strip():
        yield FieldError(field=f"{at}.image", reason="Required value")
    for p, port in enumerate(container.ports):
        port_at = field_path(at, "ports", p)
        if not 0 < port.container_port < 65536:
            yield FieldError(
                field=f"{port_at}.containerPort",
                reason=f"Invalid value: {port.container_port}: must be between 1 and 65535",
            )
        if port.protocol not in _PROTOCOLS:
            yield FieldError(
                field=f"{port_at}.protocol",
                reason=f'Unsupported value: "{port.protocol}": supported values: '
                + ", ".join(f'"{p}"' for p in _PROTOCOLS),
            )
    yield from _resources(container.resources, f"{at}.resources")
    for e, env in enumerate(container.env):
        if not env.name or "=" in env.name or not (env.name.isascii() and env.name.isprintable()):
            yield FieldError(
                field=f"{field_path(at, 'env', e)}.name",
                reason=f'Invalid value: "{env.name}": an environment variable name is printable '
                "ASCII characters other than '='",
            )
    for m, mount in enumerate(container.volume_mounts):
        if mount.name not in volumes:
            yield FieldError(
                field=f"{field_path(at, 'volumeMounts', m)}.name",
                reason=f'Not found: "{mount.name}": no volume of the podSpec has that name',
            )


def _resources(resources: _Resources, at: str) -> Iterator[FieldError]:
    parsed: dict[str, dict[str, Decimal]] = {}
    for kind, values in (("requests", resources.requests), ("limits", resources.limits)):
        parsed[kind] = {}
        for name, value in values.items():
            found = quantity(value)
            if found is None:
                yield FieldError(
                    field=f"{at}.{kind}[{name}]",
                    reason=f'Invalid value: "{value}": quantities must match the regular '
                    "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )
            elif found < 0:
                yield FieldError(
                    field=f"{at}.{kind}[{name}]",
                    reason=f'Invalid value: "{value}": must be greater than or equal to 0',
                )
            else:
                parsed[kind][name] = found
    for name, request in parsed["requests"].items():
        limit = parsed["limits"].get(name)
        if limit is not None and request > limit:
            yield FieldError(
                field=f"{at}.requests[{name}]",
                reason=f'Invalid value: "{resources.requests[name]}": must be less than or '
                f"equal to {name} limit of {resources.limits[name]}",
            )


class _PriorityOnly(msgspec.Struct, rename="camel"):
    priority_class_name: str | None = None


def priority_class_of(pod_spec: msgspec.Raw) -> str | None:
    """A raw podSpec's priorityClassName, decoding nothing else of it."""
    return msgspec.json.decode(pod_spec, type=_PriorityOnly).priority_class_name


def quantity_text(value: Decimal) -> str:
    """A quantity as Kubernetes writes it: whole units, else thousandths rounded up."""
    if value == value.to_integral_value():
        return str(int(value))
    return f"{math.ceil(value * 1000)}m"


def pod_requests(pod_spec: msgspec.Raw | bytes) -> dict[str, Decimal]:
    """What a pod made from ``pod_spec`` asks of a node, as the scheduler counts it: its
    containers' and sidecars' requests summed (a limit stands for a request not given, as
    the API server defaults it), or an init container's when larger, plus the overhead.
    Quantities that do not parse count as none (admission refuses them)."""
    spec = msgspec.json.decode(pod_spec, type=_PodSpec)

    def asked(container: _Container) -> dict[str, Decimal]:
        given = {**container.resources.limits, **container.resources.requests}
        return {name: q for name, value in given.items() if (q := quantity(value)) is not None}

    def add(into: dict[str, Decimal], more: dict[str, Decimal]) -> None:
        for name, value in more.items():
            into[name] = into.get(name, Decimal(0)) + value

    running: dict[str, Decimal] = {}
    for container in spec.containers:
        add(running, asked(container))
    total = dict(running)
    sidecars: dict[str, Decimal] = {}
    for init in spec.init_containers:
        if init.restart_policy == "Always":  # runs beside the containers from its start
            add(sidecars, asked(init))
            add(total, asked(init))
            continue
        for name, value in asked(init).items():  # runs alone, beside the sidecars before it
            total[name] = max(total.get(name, Decimal(0)), value + sidecars.get(name, 0))
    add(total, {n: q for n, v in spec.overhead.items() if (q := quantity(v)) is not None})
    return total
