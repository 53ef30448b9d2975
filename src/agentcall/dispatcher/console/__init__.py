"""The Dispatcher's read-only console at ``/ui``: tasks, calls and plumbing, refreshed live."""
