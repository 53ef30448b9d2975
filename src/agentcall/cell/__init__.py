"""The telephony cell the Dispatcher drives (media plane: sim and SIP modes, voice agent)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("agentcall")  # the one version of the distribution
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
