"""Lease tokens: a worker holds the token, the database only its SHA-256 digest. Every check
of a token a worker presents against the stored digest is `token_is_current` (worker
messages, heartbeats, offered leases)."""

from __future__ import annotations

import hashlib
import hmac


def token_digest(lease_token: str) -> str:
    """The hex SHA-256 digest of a lease token, as stored with its attempt."""
    return hashlib.sha256(lease_token.encode("ascii", "replace")).hexdigest()


def token_is_current(lease_token: str, stored_sha256: str) -> bool:
    """Whether the presented token is the attempt's current one (constant-time compare)."""
    return hmac.compare_digest(token_digest(lease_token), stored_sha256)
