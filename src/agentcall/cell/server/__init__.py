"""HTTP + WebSocket API of the cell (Starlette)."""
