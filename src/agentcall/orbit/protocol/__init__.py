"""The worker protocol `orbit.worker.v1`: its messages and framing, shared by the server and
the worker SDK."""
