"""Opt-out detection: does what the callee said ask us to stop calling?"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

DEFAULT_OPT_OUT_PHRASES: tuple[str, ...] = (
    "stop calling",
    "do not call",
    "don't call",
    "remove me from your list",
    "unsubscribe",
    "不要再打",
    "别再打",
    "不要打了",
)


def _normalise(text: str) -> str:
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = folded.replace("’", "'")
    return " ".join(folded.split())


@dataclass(frozen=True)
class OptOutDetector:
    phrases: tuple[str, ...] = DEFAULT_OPT_OUT_PHRASES

    @classmethod
    def of(cls, phrases: Iterable[str]) -> OptOutDetector:
        cleaned = tuple(p for p in (_normalise(x) for x in phrases) if p)
        return cls(phrases=cleaned)

    def detect(self, text: str) -> str | None:
        """The first phrase found in ``text`` (case, width and spacing ignored), or None."""
        haystack = _normalise(text)
        for phrase in self.phrases:
            if _normalise(phrase) in haystack:
                return phrase
        return None
