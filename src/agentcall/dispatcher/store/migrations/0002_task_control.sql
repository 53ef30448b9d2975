-- 0002: task control (D-CTL-1..5, D-DISC-7): control processings, drains, verified revision.

-- Task revision last verified by a control's fresh task GET; a discovery row that is not
-- newer never re-closes admission a verified resume lifted (D-DISC-7).
ALTER TABLE tasks ADD COLUMN control_revision INTEGER NOT NULL DEFAULT 0;

-- One row per processing of a task.control, in delivery order (seq). The receipt's event_id
-- is fixed when the control is received, so a restart or a republish reuses it (D-CTL-1).
CREATE TABLE control_jobs (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id           TEXT NOT NULL UNIQUE,
    task_id            TEXT NOT NULL,
    action             TEXT NOT NULL CHECK (action IN ('pause','resume','stop')),
    active_call_policy TEXT CHECK (active_call_policy IN ('drain','hangup')),
    dispatcher_id      TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    tenant_key         TEXT NOT NULL,
    trace_id           TEXT NOT NULL,
    issued_at          TEXT NOT NULL,
    not_after          TEXT NOT NULL,
    reason             TEXT NOT NULL,
    phase              TEXT NOT NULL CHECK (phase IN ('received','decided','done')),
    status             TEXT CHECK (status IN ('applied','rejected')),
    barrier            TEXT CHECK (barrier IN ('none','closed','paused','stopped','removed')),
    reason_code        TEXT,
    task_state         TEXT CHECK (task_state IN ('running','paused','stopped','closed')),
    consumer_action    TEXT CHECK (consumer_action IN ('keep','suspend','drain','reopen','drop')),
    hang_up            INTEGER NOT NULL DEFAULT 0,
    received_at        TEXT NOT NULL,
    decided_at         TEXT,
    done_at            TEXT
);
CREATE INDEX control_jobs_open ON control_jobs (task_id, seq) WHERE phase != 'done';

-- Drain of a stopped task's queue (D-CTL-4): resumed after a restart until confirmed empty.
CREATE TABLE task_drains (
    task_id      TEXT PRIMARY KEY,
    state        TEXT NOT NULL CHECK (state IN ('draining','drained')),
    acked        INTEGER NOT NULL DEFAULT 0,
    started_at   TEXT NOT NULL,
    completed_at TEXT,
    updated_at   TEXT NOT NULL
);
