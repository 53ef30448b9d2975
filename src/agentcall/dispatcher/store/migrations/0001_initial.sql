-- 0001: initial Dispatcher state (ARCHITECTURE "State (SQLite)").

-- Tasks known from discovery, with the local admission barrier (D-DISC-7, D-DISC-8, D-CTL-*).
CREATE TABLE tasks (
    task_id            TEXT PRIMARY KEY,
    tenant_id          TEXT NOT NULL,
    tenant_key         TEXT NOT NULL,
    status             TEXT NOT NULL CHECK (status IN ('running','paused','stopped','finished','removed')),
    task_revision      INTEGER NOT NULL,
    barrier            TEXT NOT NULL DEFAULT 'none' CHECK (barrier IN ('none','closed','paused','stopped','removed')),
    barrier_changed_at TEXT,
    discovered_at      TEXT NOT NULL,
    updated_at         TEXT NOT NULL
);

-- The single discovery cursor (D-DISC-1, D-DISC-5); a row exists from the start with after=0.
CREATE TABLE discovery (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    cursor        TEXT NOT NULL,
    pages_applied INTEGER NOT NULL DEFAULT 0,
    updated_at    TEXT
);
INSERT INTO discovery (id, cursor) VALUES (1, '0');

-- Every call.execute ever decided, by command_id (D-CMD-1, D-MQ-4).
CREATE TABLE inbox (
    command_id      TEXT PRIMARY KEY,
    task_id         TEXT NOT NULL,
    decision        TEXT NOT NULL CHECK (decision IN ('accepted','rejected','discarded_stopped')),
    reason_code     TEXT,
    execution_id    TEXT,
    result_event_id TEXT,
    received_at     TEXT NOT NULL
);

-- Accepted executions with their pinned snapshot; occupancy is derived from state (D-CMD-4).
CREATE TABLE executions (
    execution_id           TEXT PRIMARY KEY,
    command_id             TEXT NOT NULL UNIQUE REFERENCES inbox (command_id),
    call_id                TEXT NOT NULL UNIQUE,
    task_id                TEXT NOT NULL,
    tenant_id              TEXT NOT NULL,
    trunk_id               TEXT NOT NULL,
    state                  TEXT NOT NULL CHECK (state IN
                               ('accepted','dialing','ringing','in_call','ended','finalized','unknown')),
    snapshot_json          TEXT NOT NULL,
    call_result_event_id   TEXT NOT NULL UNIQUE,
    cell_boot_id           TEXT,
    end_json               TEXT,
    accepted_at            TEXT NOT NULL,
    dial_started_at        TEXT,
    ended_at               TEXT,
    finalized_at           TEXT,
    updated_at             TEXT NOT NULL
);
CREATE INDEX executions_live ON executions (state) WHERE state NOT IN ('ended', 'finalized');
CREATE INDEX executions_task ON executions (task_id, state);

-- Agent version content digests: same id with different content is refused (D-CFG-2).
CREATE TABLE agent_versions (
    agent_version_id TEXT PRIMARY KEY,
    content_sha256   TEXT NOT NULL,
    first_seen_at    TEXT NOT NULL
);

-- Durable outbox of command.result / call.result (D-MQ-4, D-ID-3).
CREATE TABLE outbox (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    event_id     TEXT NOT NULL UNIQUE,
    event_type   TEXT NOT NULL,
    routing_key  TEXT NOT NULL,
    body         BLOB NOT NULL,
    size_bytes   INTEGER NOT NULL,
    sha256       TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('pending','delivered','blocked_payload_too_large')),
    attempts     INTEGER NOT NULL DEFAULT 0,
    last_error   TEXT,
    created_at   TEXT NOT NULL,
    delivered_at TEXT
);
CREATE INDEX outbox_pending ON outbox (seq) WHERE state = 'pending';

-- Inputs refused at a boundary: redacted facts only, never the payload (D-MQ-5, D-DISC-4).
CREATE TABLE rejected_inputs (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    at         TEXT NOT NULL,
    source     TEXT NOT NULL,
    reason     TEXT NOT NULL,
    detail     TEXT NOT NULL,
    size_bytes INTEGER,
    sha256     TEXT
);
