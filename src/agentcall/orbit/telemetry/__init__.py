"""OpenTelemetry tracing of the server and the worker SDK (docs/orbit/tracing.md): off unless
enabled, and then the only module that imports `opentelemetry`."""
