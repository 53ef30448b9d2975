"""The state file guard's decision (pure): does the path still name the file the D holds?"""

from __future__ import annotations

import pytest

from agentcall.dispatcher.store.guard import Seen, StateFileLost, file_problem

pytestmark = pytest.mark.unit

HELD = (7, 1234)

CASES = [
    # (name, links of the held file, what a stat of the path says, the word of the problem)
    ("intact", 1, Seen(7, 1234), None),
    ("deleted: the path is gone", 0, Seen(error="No such file or directory"), "cannot be found"),
    ("renamed away: the path is gone", 1, Seen(error="No such file or directory"), "found"),
    ("replaced by another file", 1, Seen(7, 999), "replaced"),
    ("the same inode number on another device", 1, Seen(8, 1234), "replaced"),
    ("deleted, then a new file made at the path", 0, Seen(7, 5678), "replaced"),
    ("unlinked while the path still resolves to it", 0, Seen(7, 1234), "deleted"),
    ("the directory became unreadable", 1, Seen(error="Permission denied"), "Permission"),
]


@pytest.mark.parametrize(("name", "links", "seen", "word"), CASES, ids=[c[0] for c in CASES])
def test_the_path_must_name_the_held_file(
    name: str, links: int, seen: Seen, word: str | None
) -> None:
    problem = file_problem(*HELD, links, seen)
    if word is None:
        assert problem is None
    else:
        assert problem is not None and word in problem


def test_a_lost_state_file_is_an_os_failure_that_no_loop_quarantines() -> None:
    """The intake takes a failing batch apart and dead-letters what fails alone, except
    on ``sqlite3.Error | OSError``; a lost state file must stop the process instead."""
    assert isinstance(StateFileLost("x"), OSError)
