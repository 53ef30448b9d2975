-- 0005: the highest task revision seen (D-NOTE-1) and explicit renewal requests (D-NOTE-7).

-- Highest task_revision this D has seen for a task from a task GET used by admission;
-- discovery's task_revision and the control's control_revision count as well: a read
-- below max(task_revision, control_revision, seen_revision) is stale (D-NOTE-1).
ALTER TABLE tasks ADD COLUMN seen_revision INTEGER NOT NULL DEFAULT 0;

-- When the cell asked for a new upload authorization (its grant expired before its PUT
-- began); the D re-authorizes only such a request, never on its own (D-NOTE-7).
ALTER TABLE recordings ADD COLUMN renewal_requested_at TEXT;
