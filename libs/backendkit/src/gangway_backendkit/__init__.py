"""The backend kit: implement ``Backend`` in one file, call ``run(backend)``.

The kit consumes the backend's PodGang subjects (replicas share one durable consumer),
converges one PodGang at a time, retries with backoff, dead-letters what keeps failing,
records ``BackendSynced`` on the PodGang, and serves prepare-pods and validate as a NATS
micro service. A third-party scheduler plugs in this way without any change to Gangway.
"""
