"""A container's environment as the kubelet makes it, for the tests of Grove's pod discovery:
in list order, ``$(VAR)`` of an earlier variable expanded, a label fieldRef read from the
pod's own labels (the only fieldRefs Grove's variables use)."""

from __future__ import annotations

import re
from typing import Any, Final

import dns.asyncresolver
import dns.resolver

# What Dynamo's operator writes into a multi-node worker to reach its leader.
DYNAMO_LEADER: Final = "$(GROVE_PCSG_NAME)-$(GROVE_PCSG_INDEX)-leader-0.$(GROVE_HEADLESS_SERVICE)"
_REFERENCE = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")
_LABEL = re.compile(r"metadata\.labels\['([^']+)'\]")


def expanded(pod: dict[str, Any], container: dict[str, Any]) -> dict[str, str]:
    env: dict[str, str] = {}
    for var in container.get("env", []):
        if "valueFrom" in var:
            path = var["valueFrom"]["fieldRef"]["fieldPath"]
            match = _LABEL.fullmatch(path)
            assert match, path
            env[var["name"]] = pod["metadata"]["labels"][match[1]]
        else:
            env[var["name"]] = _REFERENCE.sub(lambda m: env.get(m[1], m[0]), var.get("value", ""))
    return env


def fqdn(pod: dict[str, Any]) -> str:
    """The name a pod's hostname and subdomain give it in the cluster's DNS."""
    spec, meta = pod["spec"], pod["metadata"]
    return f"{spec['hostname']}.{spec['subdomain']}.{meta['namespace']}.svc.cluster.local"


async def resolve(port: int, name: str) -> list[str]:
    """``name``'s addresses, asked of the DNS server on 127.0.0.1:``port`` alone; none while
    it does not know the name (endpoint slices follow pods a moment later)."""
    resolver = dns.asyncresolver.Resolver(configure=False)
    resolver.nameservers, resolver.port = ["127.0.0.1"], port
    try:
        answer = await resolver.resolve(name, "A", raise_on_no_answer=False)
    except dns.resolver.NXDOMAIN:
        return []
    return sorted(record.address for record in answer)
