"""Pure core of the Mock SaaS: no I/O, ``now`` is always passed in."""
