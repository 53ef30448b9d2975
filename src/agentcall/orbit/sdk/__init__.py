"""The Orbit SDKs: `sdk.client` (the Task API, sync and async) and `sdk.worker` (serve tasks)."""
