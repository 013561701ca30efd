"""What stops a service from starting, said without a traceback (``service.run`` exits 2).

Its own module so that what raises it (a backend finding its API missing) imports nothing of
the service's wiring and connections.
"""

from __future__ import annotations


class CannotStart(Exception):
    """The environment lacks something the service needs (an API, a CRD, a setting); the
    message says what and how to fix it. The process exits 2 instead of crash-looping on
    a traceback."""
