"""Failures of the real (non-mock) voice-agent providers.

::

    CellError
    └── ProviderError              a provider call failed (the turn is skipped, the call goes on)
        ├── ProviderTimeoutError   it took longer than the config's timeout_ms
        └── ProviderConfigError    the provider is not configured (URL, key, binary, model)
"""

from __future__ import annotations

from agentcall.cell.domain.errors import CellError


class ProviderError(CellError):
    """A provider call failed; the log names the provider_ref and the cause. Check the
    provider's service (LLM endpoint) or tool (espeak-ng, pocketsphinx) is reachable."""


class ProviderTimeoutError(ProviderError):
    """The provider answered slower than the agent config's timeout_ms: raise timeout_ms
    or use a faster model."""


class ProviderConfigError(ProviderError):
    """The provider is not configured: set the environment variables or the providers
    file named in docs/cell-sip.md (base URL, API key, binary path)."""
