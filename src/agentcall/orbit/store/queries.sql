-- Orbit's hot statements, each written once and named (`orbit.store.sql` loads this file).
-- `:name` binds a value, or a list of values for `IN (:name)`; `{name}` is a fragment: one
-- defined below, or one of the dialect's (`orbit.store.connector`): `{for_update}`,
-- `{skip_locked}` (row locks on MySQL/MariaDB, nothing on SQLite, whose writer is alone),
-- `{least}` (the smaller of two values), `{clock}` (the database clock), `{rows:name}` (a list
-- of row values for `(a, b) IN ({rows:name})`).

-- name: now
-- The database clock: the authority for acceptance and lease times.
SELECT {clock} AS now_at

-- name: lease_candidates
-- WAITING tasks of a queue that the handlers serve and that may lease now (the SQL twin of
-- `orbit.domain.leasing.ineligibility`) in lease order (`orbit.domain.lease_order`: readiness
-- with a head start per step of priority), locked, skipping rows others hold. Read from
-- ix_tasks_lease in order: the unary `+` keeps SQLite's planner, which has no statistics, from
-- taking (state, deadline_at) instead and sorting the queue's WAITING rows.
SELECT * FROM tasks
WHERE queue_id = :queue_id AND state = :waiting AND available_at <= :now
  AND +deadline_at > :now AND (start_deadline_at IS NULL OR start_deadline_at > :now)
  AND attempt_count < retry_max_attempts AND (handler, handler_version) IN ({rows:handlers})
ORDER BY lease_order, id LIMIT :limit{skip_locked}

-- name: clocked_lease_candidates
-- `lease_candidates` at the database clock, read in the same statement (one round trip less
-- for a lease transaction that has no clock yet): the clock in front of every row.
SELECT {clock} AS now_at, tasks.* FROM tasks
WHERE queue_id = :queue_id AND state = :waiting AND available_at <= {clock}
  AND +deadline_at > {clock} AND (start_deadline_at IS NULL OR start_deadline_at > {clock})
  AND attempt_count < retry_max_attempts AND (handler, handler_version) IN ({rows:handlers})
ORDER BY lease_order, id LIMIT :limit{skip_locked}

-- name: attempt_columns
-- An attempt with the facts of its task that its transitions need (`store.execution.LiveAttempt`).
a.id, a.task_id, a.namespace_id, a.queue_id, a.number, a.state, a.lease_token_sha256,
a.connection_id, a.lease_expires_at, a.attempt_deadline_at, a.started_at, a.end_reason,
a.end_digest, a.evidence_count, t.state AS task_state, t.revision AS task_revision,
t.cancel_requested_at AS task_cancel_requested_at, t.recovery_safety, t.retry_max_attempts,
t.retry_initial_delay_ms, t.retry_max_delay_ms, t.retry_attempt_timeout_ms, t.attempt_count,
t.deadline_at, t.start_deadline_at, t.lease_rank

-- name: live_attempts
-- Attempts by id with their task, both locked: worker messages and cancels serialise here.
SELECT {attempt_columns} FROM task_attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.id IN (:ids){for_update}

-- name: clocked_live_attempts
-- `live_attempts` at the database clock, read in the same statement (one round trip less for
-- a batch of starts or results that has no clock yet): the clock in front of every row.
SELECT {clock} AS now_at, {attempt_columns}
FROM task_attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.id IN (:ids){for_update}

-- name: expired_attempts
-- Live attempts whose lease ran out (a lease never outlives its attempt deadline).
SELECT {attempt_columns} FROM task_attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.state IN (:live) AND a.lease_expires_at <= :now
ORDER BY a.lease_expires_at LIMIT :limit{skip_locked}

-- name: waiting_past_deadline
SELECT id, revision, start_deadline_at, deadline_at, queue_id FROM tasks
WHERE state = :waiting AND deadline_at <= :now
ORDER BY deadline_at LIMIT :limit{skip_locked}

-- name: waiting_past_start_deadline
SELECT id, revision, start_deadline_at, deadline_at, queue_id FROM tasks
WHERE state = :waiting AND start_deadline_at <= :now
ORDER BY start_deadline_at LIMIT :limit{skip_locked}

-- name: heartbeat_attempts
SELECT a.id, a.state, a.lease_token_sha256, a.namespace_id, a.queue_id, a.lease_expires_at,
       a.attempt_deadline_at, t.cancel_requested_at
FROM task_attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.id IN (:ids)

-- name: renew_leases
-- Every renewed lease in one statement: min(now + ttl, attempt deadline) each.
UPDATE task_attempts
SET lease_expires_at = {least}(:renewed, attempt_deadline_at), last_heartbeat_at = :now
WHERE id IN (:ids) AND state IN (:live) AND lease_expires_at > :now

-- name: renew_and_rebind_leases
-- `renew_leases`, and the attempts move to this connection (a worker's `hello`).
UPDATE task_attempts
SET lease_expires_at = {least}(:renewed, attempt_deadline_at), last_heartbeat_at = :now,
    connection_id = :connection_id
WHERE id IN (:ids) AND state IN (:live) AND lease_expires_at > :now

-- name: shorten_leases
-- The leases of a closed connection end at `cut` unless they end earlier anyway.
UPDATE task_attempts SET lease_expires_at = :cut
WHERE connection_id = :connection_id AND state IN (:live) AND lease_expires_at > :cut

-- name: evidence_digests
SELECT ev_key, digest FROM task_attempt_evidence
WHERE attempt_id = :attempt_id AND ev_key IN (:keys)

-- name: count_evidence
UPDATE task_attempts SET evidence_count = evidence_count + :added WHERE id = :attempt_id

-- name: token
-- A token by the SHA-256 of its secret, one row per queue it is scoped to.
SELECT t.id, t.namespace_id, t.permissions, t.expires_at, t.revoked_at, q.queue_id, t.name
FROM tokens t LEFT OUTER JOIN token_queues q ON q.token_id = t.id
WHERE t.secret_sha256 = :secret_sha256

-- name: receipt_columns
r.namespace_id, r.idem_key, r.digest_alg, r.digest, r.status_code, r.receipt

-- name: receipts
-- The idempotency records of one operation and target among the namespaces and keys.
SELECT {receipt_columns} FROM idempotency_records r
WHERE r.operation = :operation AND r.target = :target
  AND r.namespace_id IN (:namespaces) AND r.idem_key IN (:keys)

-- name: clock_and_receipts
-- `receipts` with the database clock in front: one row of NULLs when no record matches.
SELECT {clock} AS now_at, {receipt_columns}
FROM (SELECT 1 AS one) clock LEFT OUTER JOIN idempotency_records r
  ON r.operation = :operation AND r.target = :target
  AND r.namespace_id IN (:namespaces) AND r.idem_key IN (:keys)

-- name: recorded_workers
-- The namespace's workers as the other server processes recorded them, with the heartbeat of
-- the recording process and the database clock (`orbit.domain.worker_directory`): the caller
-- shows the live ones only.
SELECT {clock} AS now_at, w.*, s.heartbeat_at AS server_heartbeat_at
FROM orbit_server_workers w JOIN orbit_servers s ON s.id = w.server_id
WHERE w.namespace_id = :namespace_id AND w.server_id <> :server_id

-- name: unrecord_workers
-- Rows of this process's workers that left or changed since its last round.
DELETE FROM orbit_server_workers WHERE server_id = :server_id AND connection_id IN (:ids)

-- name: unrecord_servers_workers
-- Every row of these server processes (dead ones, or this one at a clean stop).
DELETE FROM orbit_server_workers WHERE server_id IN (:server_ids)

-- name: open_offers
-- Unclaimed offers of the namespace that may serve the queue (`orbit.store.offers`), oldest
-- first, locked, skipping those another submit is claiming. In READ COMMITTED InnoDB
-- releases at once the rows the LIKE rejects.
SELECT * FROM orbit_worker_offers
WHERE namespace_id = :namespace_id AND task_id IS NULL AND queues LIKE :queue_pattern
ORDER BY created_at, id LIMIT :limit{skip_locked}

-- name: withdraw_offer
-- The offering process takes its slot back: 1 row when nobody claimed it, 0 when a submit
-- did (then it delivers that lease instead).
DELETE FROM orbit_worker_offers WHERE id = :offer_id AND task_id IS NULL

-- name: claimed_offers
-- This process's offers that submits claimed (the deliveries that a lost datagram left).
SELECT id, task_id FROM orbit_worker_offers
WHERE server_id = :server_id AND task_id IS NOT NULL

-- name: drop_offers
DELETE FROM orbit_worker_offers WHERE id IN (:ids)

-- name: forget_servers_offers
-- Every offer of these server processes (dead ones, or this one at a clean stop).
DELETE FROM orbit_worker_offers WHERE server_id IN (:server_ids)

-- name: offered_lease
-- The task and the lease a claim wrote for an offer's attempt (what the offering process
-- sends its worker), if that attempt exists on that connection.
SELECT t.*, a.number AS a_number, a.state AS a_state, a.leased_at AS a_leased_at,
       a.lease_expires_at AS a_lease_expires_at, a.attempt_deadline_at AS a_deadline_at,
       a.lease_token_sha256 AS a_token_sha256
FROM task_attempts a JOIN tasks t ON t.id = a.task_id
WHERE a.id = :attempt_id AND a.connection_id = :connection_id
