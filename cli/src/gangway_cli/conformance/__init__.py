"""``gangway conformance --backend NAME``: does a backend and its scheduler keep GREP-375's
promises? Each scenario (``scenarios.py``: what it promises, then its check) runs on a local
control plane with the backend's real scheduler, kwok nodes of its own and Gangway's
services, as ``gangway up`` runs them; the result is a table, JSON or JUnit, with the
evidence: which pods were bound, and the scheduler's words."""
