"""Imported first by every service process that does not serve HTTP with aiohttp (all but
admission): keeps aiohttp out of the process.

nats-py imports aiohttp whenever it is installed, for a websocket transport Gangway never
uses; aiohttp is 10 MiB of a service's memory (a quarter of an idle one). It is installed
beside the services for the admission webhook and the tests. Marking it absent makes
nats-py's ``import aiohttp`` fail as if it were not installed, which nats-py expects.
"""

from __future__ import annotations

import sys

sys.modules.setdefault("aiohttp", None)  # type: ignore[arg-type]
