"""Task control (issue 9): per-task serial lanes, pause/resume/stop/removed procedures, drains."""
