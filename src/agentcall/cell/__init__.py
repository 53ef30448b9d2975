"""The telephony cell the Dispatcher drives (media plane: sim and SIP modes, voice agent)."""

from __future__ import annotations

__version__ = "0.1.0"
