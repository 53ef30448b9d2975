"""What the Dispatcher observes while it works (latencies, outcomes, read errors)."""
