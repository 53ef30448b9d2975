"""Task control: per-task serial lanes, pause/resume/stop/removed procedures, drains."""
