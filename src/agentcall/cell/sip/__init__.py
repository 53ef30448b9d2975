"""The cell's SIP user agent: a minimal RFC 3261 UAC over UDP or TCP (see docs/cell-sip.md)."""
