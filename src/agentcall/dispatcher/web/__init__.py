"""Status, metrics and health HTTP endpoints (bound to 127.0.0.1 by default)."""
