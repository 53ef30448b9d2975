"""The cell's Prometheus metrics."""
