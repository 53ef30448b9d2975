"""The outage gate: what a failed SaaS read closes, and when to read again (D-NOTE-2). Pure.

A *transient* failure of the SIP, task or quota read — a transport error, a timeout, an
HTTP 5xx (503 ``service_unavailable`` / ``tenant_quota_unavailable``) — or a task GET
answered by a lagging replica (a revision below the highest seen, D-NOTE-1) closes
admission for what depends on that read and nothing else:

=========  =====================================================
read       commands held (left in, or returned to, their queue)
=========  =====================================================
sip        every command of every task
task T     the commands of task T
quota t    the commands of every task of tenant t
=========  =====================================================

A held command is never rejected because of the outage; the read is retried with capped,
jittered exponential backoff and admission reopens when it succeeds. *Definitive*
answers (401, 403, 404, a body failing its schema or an identity check) are not
outages: they reject as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from agentcall.dispatcher.domain.reconnect import ReconnectPolicy


class Read(StrEnum):
    SIP = "sip"
    TASK = "task"
    QUOTA = "quota"


@dataclass(frozen=True)
class ReadKey:
    """One read: the SIP snapshot (``key`` empty), a task (task_id) or a tenant's quota
    (tenant_id)."""

    read: Read
    key: str = ""

    def __str__(self) -> str:
        return f"{self.read}:{self.key}" if self.key else str(self.read)


SIP = ReadKey(Read.SIP)
STALE = "stale_revision"  # the error code of a task GET from a lagging replica


def transient(status: int | None, code: str) -> bool:
    """No answer (``status`` None: transport error, timeout), a 5xx, or a stale replica:
    the SaaS may answer correctly later. Everything else is a definitive answer."""
    return status is None or status >= 500 or code == STALE


def backoff(attempt: int, base_s: float, cap_s: float, jitter: float) -> float:
    """Seconds before retry ``attempt`` (1 = the first retry): the D's reconnect policy
    (``domain/reconnect.py``: capped exponential, equal jitter) with the SaaS retry bounds."""
    return ReconnectPolicy(base_s, cap_s).delay(attempt, jitter)


def blocking(outages: frozenset[ReadKey], task_id: str, tenant_id: str) -> ReadKey | None:
    """The outage that holds a command of ``task_id`` (tenant ``tenant_id``), if any."""
    for key in (SIP, ReadKey(Read.TASK, task_id), ReadKey(Read.QUOTA, tenant_id)):
        if key in outages:
            return key
    return None


@dataclass(frozen=True)
class Outage:
    """A read that keeps failing: since when, how often, when it is read again."""

    key: ReadKey
    since: datetime
    failures: int
    next_retry_at: datetime
    last_error: str
    tenant_key: str = ""  # a quota read needs it to check the answer's identity
