"""``mocksaas admin …``: the admin HTTP API from a shell; JSON on stdout."""

from agentcall.mocksaas.cli_admin import dispatchers, observe, tasks  # noqa: F401  (register commands)
from agentcall.mocksaas.cli_admin.base import admin

__all__ = ["admin"]
