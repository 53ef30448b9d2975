"""The simulation script: which callee does what.

Rules are tried in order; the first whose ``match`` fits the raw callee wins,
else ``default`` applies. ``match`` is an exact string, or one of
``{"exact": ...}``, ``{"glob": ...}`` (fnmatch, case-sensitive) or
``{"regex": ...}`` (full match). See docs/cell.md for the format.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from agentcall.cell.agent.conversation import CalleeTurn
from agentcall.cell.agent.optout import DEFAULT_OPT_OUT_PHRASES
from agentcall.cell.domain.errors import ScriptError
from agentcall.cell.domain.fields import Reader
from agentcall.cell.domain.model import Outcome

MAX_MS = 24 * 3600 * 1000
RULE_FIELDS = frozenset(
    {"name", "match", "outcome", "ring_ms", "talk_ms", "turns", "recording", "reason_code"}
)
SCRIPT_FIELDS = frozenset({"version", "rules", "default", "opt_out_phrases", "time_scale"})
DEFAULT_RING_MS: dict[Outcome, int | None] = {
    Outcome.ANSWERED: 2000,
    Outcome.NO_ANSWER: None,  # rings until the plan's ring timeout
    Outcome.BUSY: 500,
    Outcome.REJECTED: 3000,
    Outcome.FAILED: 200,
}


class MatchKind(StrEnum):
    EXACT = "exact"
    GLOB = "glob"
    REGEX = "regex"


@dataclass(frozen=True)
class Behaviour:
    outcome: Outcome
    ring_ms: int | None
    talk_ms: int | None
    turns: tuple[CalleeTurn, ...]
    recording: bool
    reason_code: str | None


@dataclass(frozen=True)
class Rule:
    name: str
    kind: MatchKind
    pattern: str
    behaviour: Behaviour

    def matches(self, callee: str) -> bool:
        if self.kind is MatchKind.EXACT:
            return callee == self.pattern
        if self.kind is MatchKind.GLOB:
            return fnmatch.fnmatchcase(callee, self.pattern)
        return re.fullmatch(self.pattern, callee) is not None


DEFAULT_BEHAVIOUR = Behaviour(
    outcome=Outcome.ANSWERED,
    ring_ms=2000,
    talk_ms=None,
    turns=(CalleeTurn("Hello?"), CalleeTurn("Yes, I am listening.")),
    recording=True,
    reason_code=None,
)


@dataclass(frozen=True)
class Script:
    rules: tuple[Rule, ...] = ()
    default: Behaviour = DEFAULT_BEHAVIOUR
    opt_out_phrases: tuple[str, ...] = DEFAULT_OPT_OUT_PHRASES
    time_scale: float | None = None

    def behaviour_for(self, callee: str) -> tuple[str, Behaviour]:
        """(rule name, behaviour) of the first rule matching ``callee``, else the default."""
        for rule in self.rules:
            if rule.matches(callee):
                return rule.name, rule.behaviour
        return "default", self.default


def _turn(item: object, path: str) -> CalleeTurn:
    if isinstance(item, str):
        return CalleeTurn(text=item)
    r = Reader(item, path, ScriptError, frozenset({"text", "at_ms", "duration_ms"}))
    return CalleeTurn(
        text=r.string("text", max_len=4096),
        at_ms=r.opt_integer("at_ms", maximum=MAX_MS),
        duration_ms=r.opt_integer("duration_ms", minimum=1, maximum=MAX_MS),
    )


def _behaviour(r: Reader) -> Behaviour:
    try:
        outcome = Outcome(r.string("outcome", max_len=32))
    except ValueError:
        raise r.fail("outcome", f"must be one of {', '.join(o.value for o in Outcome)}") from None
    turns = tuple(_turn(t, r.name(f"turns[{i}]")) for i, t in enumerate(r.opt_list("turns") or []))
    if turns and outcome is not Outcome.ANSWERED:
        raise r.fail("turns", "only an answered callee can speak")
    ring_ms = r.opt_integer("ring_ms", maximum=MAX_MS)
    return Behaviour(
        outcome=outcome,
        ring_ms=ring_ms if ring_ms is not None else DEFAULT_RING_MS[outcome],
        talk_ms=r.opt_integer("talk_ms", maximum=MAX_MS),
        turns=turns,
        recording=r.opt_boolean("recording") is not False,
        reason_code=r.opt_string("reason_code", max_len=64, allow_empty=False),
    )


def _match(r: Reader) -> tuple[MatchKind, str]:
    raw = r.obj.get("match")
    if isinstance(raw, str) and raw:
        return MatchKind.EXACT, raw
    m = Reader(raw, r.name("match"), ScriptError, frozenset(k.value for k in MatchKind))
    if len(m.obj) != 1:
        raise r.fail("match", 'must be a string or one of {"exact"|"glob"|"regex": PATTERN}')
    key = next(iter(m.obj))
    pattern = m.string(key, max_len=1024)
    if key == MatchKind.REGEX:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise m.fail(key, f"is not a valid regular expression ({exc})") from None
    return MatchKind(key), pattern


def _rule(item: object, index: int) -> Rule:
    r = Reader(item, f"rules[{index}]", ScriptError, RULE_FIELDS)
    kind, pattern = _match(r)
    name = r.opt_string("name", max_len=128, allow_empty=False) or f"rules[{index}]"
    return Rule(name=name, kind=kind, pattern=pattern, behaviour=_behaviour(r))


def parse_script(obj: object) -> Script:
    """Read a script object; raises :class:`ScriptError` naming the bad field."""
    r = Reader(obj, "", ScriptError, SCRIPT_FIELDS)
    version = r.opt_integer("version", minimum=1, maximum=1)
    del version  # only version 1 exists
    rules = tuple(_rule(item, i) for i, item in enumerate(r.opt_list("rules") or []))
    default_r = r.opt_child("default", RULE_FIELDS - {"match", "name"})
    phrases = r.opt_list("opt_out_phrases")
    if phrases is not None and not all(isinstance(p, str) and p.strip() for p in phrases):
        raise r.fail("opt_out_phrases", "must be a list of non-empty strings")
    scale = r.opt_number("time_scale")
    if scale is not None and not 0 < scale <= 100:
        raise r.fail("time_scale", "must be > 0 and <= 100")
    return Script(
        rules=rules,
        default=_behaviour(default_r) if default_r else DEFAULT_BEHAVIOUR,
        opt_out_phrases=tuple(phrases) if phrases is not None else DEFAULT_OPT_OUT_PHRASES,
        time_scale=scale,
    )


def load_script(path: Path) -> Script:
    """Read and validate the script file at ``path``."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc.strerror}", field="script") from exc
    try:
        obj: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScriptError(
            f"script {path} is not valid JSON (line {exc.lineno}, column {exc.colno})",
            field="script",
        ) from exc
    return parse_script(obj)
