"""Shared parts of ``mocksaas admin``: the HTTP client and the command group."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import click
import httpx


class Api:
    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        params: dict[str, Any] | None = None,
        *,
        idempotency_key: str | None = None,
        attempts: int = 1,
    ) -> Any:
        """One admin request. With an idempotency key, a transport error or a 5xx is
        retried (``attempts`` in all) with the same key: the server answers the first
        request's outcome and never acts twice."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        for attempt in range(1, attempts + 1):
            try:
                r = httpx.request(
                    method,
                    f"{self.url}/admin/v1{path}",
                    json=body,
                    params=params,
                    headers=headers,
                    timeout=120,
                )
            except httpx.HTTPError as exc:
                if attempt < attempts:
                    time.sleep(0.5 * attempt)
                    continue
                click.echo(
                    json.dumps(
                        {
                            "error": {
                                "code": "unreachable",
                                "message": str(exc),
                                "hint": "start `mocksaas serve` or fix --url",
                            }
                        }
                    ),
                    err=True,
                )
                sys.exit(1)
            if r.status_code < 500 or attempt == attempts:
                break
            time.sleep(0.5 * attempt)
        data = r.json() if r.content else {}
        if r.status_code >= 300:
            click.echo(json.dumps(data), err=True)
            sys.exit(1)
        return data


def emit(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, ensure_ascii=False))


def drop_none(**values: Any) -> dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None and v != ()}


pass_api = click.make_pass_decorator(Api)


@click.group()
@click.option(
    "--url",
    envvar="MOCKSAAS_URL",
    default="http://127.0.0.1:8088",
    show_default=True,
    help="Base URL of a running `mocksaas serve`.",
)
@click.pass_context
def admin(ctx: click.Context, url: str) -> None:
    """Script scenarios against a running Mock SaaS (prints JSON; exit 1 on errors)."""
    ctx.obj = Api(url)
