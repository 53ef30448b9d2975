"""The Starlette application of one cell process."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator

from starlette.applications import Starlette

from agentcall.cell.domain.errors import CellError
from agentcall.cell.runtime.service import CellService
from agentcall.cell.server import batch, routes, stream
from agentcall.cell.server.http import handle_cell_error, handle_unexpected


def build_app(service: CellService) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await service.start()
        try:
            yield
        finally:
            await service.aclose()

    app = Starlette(
        routes=[*batch.ROUTES, *routes.ROUTES, *stream.ROUTES],
        exception_handlers={CellError: handle_cell_error, Exception: handle_unexpected},
        lifespan=lifespan,
    )
    app.state.service = service
    return app
