"""The running cell: the service behind the API (admission, the call table, events,
recordings), the supervision of one live call, and the recording uploads."""
