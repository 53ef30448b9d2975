-- 0003: recordings (D-REC-1, D-REC-2) and the position in the cell's event stream.

-- One row per accepted call whose recording was expected; opened in the transaction that
-- ends the call, closed (uploaded / unavailable) in the transaction that stores the
-- call.result. upload_id and object_key are fixed at opening and never change.
CREATE TABLE recordings (
    execution_id     TEXT PRIMARY KEY REFERENCES executions (execution_id),
    call_id          TEXT NOT NULL UNIQUE,
    recording_id     TEXT NOT NULL UNIQUE,
    upload_id        TEXT NOT NULL UNIQUE,
    bucket           TEXT NOT NULL,
    object_key       TEXT NOT NULL UNIQUE,
    source           TEXT NOT NULL CHECK (source IN ('call','orphan')),
    state            TEXT NOT NULL CHECK (state IN
                         ('waiting','ready','authorized','expired','put_unknown','put_done',
                          'uploaded','unavailable')),
    media_json       TEXT,
    ended_at         TEXT NOT NULL,
    deadline_at      TEXT NOT NULL,
    authorizations   INTEGER NOT NULL DEFAULT 0,
    authorized_until TEXT,
    error_code       TEXT CHECK (error_code IN
                         ('upload_authorization_failed','upload_authorization_expired',
                          'upload_failed','upload_timeout','deadline_exceeded',
                          'checksum_mismatch')),
    detail           TEXT,
    opened_at        TEXT NOT NULL,
    closed_at        TEXT,
    updated_at       TEXT NOT NULL
);
CREATE INDEX recordings_open ON recordings (deadline_at)
    WHERE state NOT IN ('uploaded', 'unavailable');

-- Where the D is in the cell's ordered event stream: the boot id the seq belongs to.
CREATE TABLE cell_stream (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    boot_id    TEXT,
    last_seq   INTEGER NOT NULL DEFAULT 0,
    updated_at TEXT
);
INSERT INTO cell_stream (id, last_seq) VALUES (1, 0);
