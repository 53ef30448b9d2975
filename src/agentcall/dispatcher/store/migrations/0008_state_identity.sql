-- 0008: whose state this file is. One row, written when the file is created
-- (``dispatcher init-state``) or, for a file from an older version, at its first open;
-- a D refuses a state file that names another dispatcher id.
CREATE TABLE state_identity (
    singleton     INTEGER PRIMARY KEY CHECK (singleton = 1),
    dispatcher_id TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
