"""An in-process OTLP collector for the tracing tests: an HTTP server on loopback taking the
OTLP/HTTP protobuf export requests (`POST /v1/traces`) of OpenTelemetry's exporter, decoded
with the opentelemetry-proto message classes into plain `Span` records."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk import environment_variables


def opentelemetry_reads(name: str) -> bool:
    """Whether `name` is one of the `OTEL_*` variables the OpenTelemetry SDK reads (the
    exporter's endpoint, the service name, the sampler, ...)."""
    return name.startswith("OTEL_") and name in {
        getattr(environment_variables, attr)
        for attr in dir(environment_variables)
        if attr.startswith("OTEL_")
    }


@dataclass(frozen=True)
class Span:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    kind: int
    attributes: dict[str, Any]
    status: int  # 0 unset, 1 ok, 2 error
    start_ns: int = 0
    end_ns: int = 0


@dataclass
class Collector:
    endpoint: str  # OTEL_EXPORTER_OTLP_TRACES_ENDPOINT
    spans: list[Span] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def named(self, name: str) -> list[Span]:
        with self.lock:
            return [span for span in self.spans if span.name == name]

    def environment(self) -> dict[str, str]:
        """The OTEL_* variables that send a process's spans here, quickly."""
        return {
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": self.endpoint,
            "OTEL_BSP_SCHEDULE_DELAY": "100",
            "OTEL_TRACES_SAMPLER": "parentbased_always_on",
        }


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    return getattr(value, kind) if kind else None


def decode(body: bytes) -> list[Span]:
    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    found = []
    for resource_spans in request.resource_spans:
        resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
        for scope in resource_spans.scope_spans:
            for span in scope.spans:
                found.append(
                    Span(
                        service=str(resource.get("service.name", "")),
                        name=span.name,
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        kind=span.kind,
                        attributes={a.key: _value(a.value) for a in span.attributes},
                        status=span.status.code,
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                    )
                )
    return found


@contextmanager
def collector() -> Iterator[Collector]:
    """A collector listening on a free loopback port until the block ends."""
    sink: list[Span] = []
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server's name)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            spans = decode(body)
            with lock:
                sink.extend(spans)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, name="otlp-collector", daemon=True)
    thread.start()
    try:
        port = server.server_address[1]
        yield Collector(f"http://127.0.0.1:{port}/v1/traces", sink, lock)
    finally:
        server.shutdown()
        server.server_close()
