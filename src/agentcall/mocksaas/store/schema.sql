-- Mock SaaS state. Times are RFC 3339 UTC strings.
CREATE TABLE IF NOT EXISTS dispatchers (
    dispatcher_id TEXT PRIMARY KEY,
    secret        TEXT NOT NULL,
    authorized    INTEGER NOT NULL DEFAULT 1,
    page_size     INTEGER,
    head          INTEGER NOT NULL DEFAULT 0,     -- last discovery event id
    created_at    TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS sip_snapshots (
    dispatcher_id TEXT PRIMARY KEY REFERENCES dispatchers(dispatcher_id),
    revision      INTEGER NOT NULL,
    body          TEXT NOT NULL
);

CREATE TABLE IF NOT EXISTS tasks (
    task_id          TEXT PRIMARY KEY,             -- globally unique (contract §1.2)
    dispatcher_id    TEXT NOT NULL REFERENCES dispatchers(dispatcher_id),
    tenant_id        TEXT NOT NULL,
    tenant_key       TEXT NOT NULL,
    status           TEXT NOT NULL,
    task_revision    INTEGER NOT NULL,
    spec             TEXT NOT NULL,
    queue_state      TEXT NOT NULL,
    last_event_id    INTEGER NOT NULL,
    removed_event_id INTEGER,
    retired_at       TEXT,
    updated_at       TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS tasks_by_event ON tasks (dispatcher_id, last_event_id);

CREATE TABLE IF NOT EXISTS events (
    dispatcher_id TEXT NOT NULL,
    event_id      INTEGER NOT NULL,
    task_id       TEXT NOT NULL,
    tenant_id     TEXT NOT NULL,
    tenant_key    TEXT NOT NULL,
    status        TEXT NOT NULL,
    task_revision INTEGER NOT NULL,
    at            TEXT NOT NULL,
    PRIMARY KEY (dispatcher_id, event_id)
);

CREATE TABLE IF NOT EXISTS quotas (
    dispatcher_id        TEXT NOT NULL,
    tenant_id            TEXT NOT NULL,
    tenant_key           TEXT NOT NULL,
    quota_revision       INTEGER NOT NULL,
    max_concurrent_calls INTEGER,                   -- NULL = unavailable (503)
    valid_for_s          INTEGER NOT NULL,
    valid_until          TEXT,
    PRIMARY KEY (dispatcher_id, tenant_id)
);

CREATE TABLE IF NOT EXISTS outbox (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    dispatcher_id TEXT NOT NULL,
    exchange      TEXT NOT NULL,
    routing_key   TEXT NOT NULL,
    kind          TEXT NOT NULL,                    -- call.execute | task.control | raw
    ref           TEXT,                             -- command_id or task_id
    body          BLOB NOT NULL,
    state         TEXT NOT NULL,                    -- pending | confirmed
    attempts      INTEGER NOT NULL DEFAULT 0,
    last_error    TEXT,
    created_at    TEXT NOT NULL,
    confirmed_at  TEXT
);
CREATE INDEX IF NOT EXISTS outbox_pending ON outbox (state, id);
CREATE INDEX IF NOT EXISTS outbox_by_ref ON outbox (dispatcher_id, ref);

CREATE TABLE IF NOT EXISTS results (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    dispatcher_id TEXT NOT NULL,
    received_at   TEXT NOT NULL,
    redelivered   INTEGER NOT NULL,
    event_id      TEXT,
    event_type    TEXT,
    command_type  TEXT,
    command_id    TEXT,
    task_id       TEXT,
    action        TEXT,
    status        TEXT,
    reason_code   TEXT,
    outcome       TEXT,
    task_state    TEXT,
    valid         INTEGER NOT NULL,
    errors        TEXT NOT NULL,                    -- JSON list of violations
    body          BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS results_by_event ON results (dispatcher_id, event_id);

CREATE TABLE IF NOT EXISTS faults (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    dispatcher_id TEXT NOT NULL,
    scope         TEXT NOT NULL,
    kind          TEXT NOT NULL,
    resource      TEXT,
    target        TEXT,
    remaining     INTEGER NOT NULL,
    delay_ms      INTEGER NOT NULL DEFAULT 0
);

-- Admin requests made idempotent by an Idempotency-Key header (POST …/calls): a retry
-- with the same key answers the same commands and publishes nothing new.
CREATE TABLE IF NOT EXISTS admin_requests (
    dispatcher_id   TEXT NOT NULL,
    idempotency_key TEXT NOT NULL,
    fingerprint     TEXT NOT NULL,                  -- SHA-256 of the task and the body
    outbox_ids      TEXT NOT NULL,                  -- JSON list
    command_ids     TEXT NOT NULL,                  -- JSON list
    created_at      TEXT NOT NULL,
    PRIMARY KEY (dispatcher_id, idempotency_key)
);
