"""What stops ``cell serve`` before it starts (pure): a placeholder left from the example
environment (``CELL_ID=CHANGE-ME`` in deploy/systemd/cell.env.example) and, in sip mode, a
speech program its providers need but cannot find (TTS ``espeak-ng``, ASR ``pocketsphinx``).

Each refusal names the setting or the program and the fix. The probes (``which`` for a program
on PATH, ``module_found`` for a Python package) are passed in, so the rules are tested as a
table without changing the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

PLACEHOLDERS = ("CHANGE-ME", "CHANGEME")
ESPEAK = "espeak-ng"  # the TTS program of the espeak-ng provider (agent.providers_espeak)
POCKETSPHINX = "pocketsphinx"  # the ASR package of the pocketsphinx provider


def is_placeholder(value: str) -> bool:
    return any(mark in value.upper() for mark in PLACEHOLDERS)


def refusals(
    mode: str,
    cell_id: str | None,
    env: Mapping[str, str],
    which: Callable[[str], str | None],
    module_found: Callable[[str], bool],
) -> list[str]:
    """Every reason not to start, in a fixed order; empty when the cell may start."""
    found: list[str] = []
    if cell_id is not None and is_placeholder(cell_id):
        found.append(
            f"--cell-id / CELL_ID is the placeholder {cell_id!r} of the example environment: "
            "set this cell's id, the artifact.cell_id of its approved SIP snapshot"
        )
    for name in sorted(env):
        if name.startswith("CELL_") and name != "CELL_ID" and is_placeholder(env[name]):
            found.append(
                f"{name} is the placeholder {env[name]!r} of the example environment: "
                "set it, or remove the line"
            )
    if mode == "sip":
        if which(ESPEAK) is None:
            found.append(
                f"sip mode needs the TTS program {ESPEAK}, not found on PATH: "
                f"apt-get install {ESPEAK} (or run --mode sim)"
            )
        if not module_found(POCKETSPHINX):
            found.append(
                f"sip mode needs the ASR package {POCKETSPHINX}, not installed: "
                "pip install 'agentcall[cell]' (or run --mode sim)"
            )
    return found
