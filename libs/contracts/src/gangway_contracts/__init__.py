"""Gangway contracts v1: the only code Gangway's services share.

Modules: ``k8s`` and ``grove`` and ``pods`` (object views), ``records`` (what the watcher
publishes), ``subjects`` (every NATS name), ``events`` (journal), ``rpc`` (backend
request/reply), ``config`` (scheduler configuration), ``errors`` (field errors),
``labels`` (well-known keys), ``schema`` (JSON Schema export).
Within v1, changes are additive only: see tests/unit/contracts/test_schema.py.
"""

CONTRACTS_VERSION = "v1"
