"""A short-lived in-process cache of token records, keyed by the secret's SHA-256.

Every request still decides with `agentcall.orbit.domain.tokens.authenticate` against the current
time, so expiry takes effect at its instant; only the record (permissions, scopes, revocation) may
be up to `ttl_s` old: a revocation or a new queue scope reaches a running server within that
time (the server's `token_cache_ms`, default 1000; 0 turns the cache off). Unknown secrets are
never cached (a new token works at once), and the cache holds at most `max_entries` records.
"""

from __future__ import annotations

from agentcall.orbit.domain.tokens import TokenRecord

DEFAULT_TTL_MS = 1000


class TokenCache:
    def __init__(self, ttl_s: float, max_entries: int = 4096) -> None:
        if ttl_s < 0 or max_entries < 1:
            raise ValueError("ttl_s must be >= 0 and max_entries >= 1")
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[str, tuple[TokenRecord, float]] = {}

    def get(self, secret_sha256: str, now: float) -> TokenRecord | None:
        """The record loaded less than `ttl_s` before `now` (a monotonic time), else None."""
        entry = self._entries.get(secret_sha256)
        if entry is None:
            return None
        record, loaded = entry
        if now - loaded >= self.ttl_s or now < loaded:
            del self._entries[secret_sha256]
            return None
        return record

    def put(self, secret_sha256: str, record: TokenRecord | None, now: float) -> None:
        """Remember a found record loaded at `now`; unknown secrets are not remembered."""
        if record is None or self.ttl_s == 0:
            return
        if len(self._entries) >= self.max_entries and secret_sha256 not in self._entries:
            self._evict(now)
        self._entries[secret_sha256] = (record, now)

    def __len__(self) -> int:
        return len(self._entries)

    def _evict(self, now: float) -> None:
        fresh = {
            key: entry for key, entry in self._entries.items() if 0 <= now - entry[1] < self.ttl_s
        }
        self._entries = fresh if len(fresh) < self.max_entries else {}
