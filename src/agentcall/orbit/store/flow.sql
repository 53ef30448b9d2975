-- The lease path of flow-controlled queues (docs/orbit/flow-control.md), loaded after
-- queries.sql with the same fragments. A lease transaction of a queue with a limit (running
-- per key, rate) locks its queue's queue_flow row first: those leases of one queue are
-- serialised across every server process. A queue with fairness alone is not locked.

-- name: flow_settings_all
SELECT queue_id, revision, settings FROM queue_flow

-- name: flow_lock
SELECT revision, settings FROM queue_flow WHERE queue_id = :queue_id{for_update}

-- name: flow_round
-- A lease round's first statement: the settings row locked, the clock, the counters.
SELECT q.revision, q.settings, {clock} AS now_at, c.kind, c.flow_key, c.level,
  c.at AS counted_at
FROM queue_flow q LEFT JOIN flow_counters c ON c.queue_id = q.queue_id
WHERE q.queue_id = :queue_id{for_update}

-- name: flow_round_shared
-- `flow_round` without the lock: the round of a queue with fairness alone.
SELECT q.revision, q.settings, {clock} AS now_at, c.kind, c.flow_key, c.level,
  c.at AS counted_at
FROM queue_flow q LEFT JOIN flow_counters c ON c.queue_id = q.queue_id
WHERE q.queue_id = :queue_id

-- name: flow_running
-- Running tasks per concurrency key of a queue: derived from the tasks, never kept apart.
SELECT concurrency_key, COUNT(*) AS running FROM tasks
WHERE queue_id = :queue_id AND state IN (:live) AND concurrency_key IS NOT NULL
GROUP BY concurrency_key

-- name: flow_counters
-- `at` read as a time like every column named *_at (SQLite keeps times as text).
SELECT kind, flow_key, level, at AS counted_at FROM flow_counters WHERE queue_id = :queue_id

-- name: flow_candidate_where
queue_id = :queue_id AND state = :waiting AND available_at <= :now
  AND +deadline_at > :now AND (start_deadline_at IS NULL OR start_deadline_at > :now)
  AND attempt_count < retry_max_attempts AND (handler, handler_version) IN ({rows:handlers})
  AND (concurrency_key IS NULL OR concurrency_key NOT IN (:blocked))

-- name: flow_candidates
-- `lease_candidates` without the concurrency keys at their limit, a wider window.
SELECT * FROM tasks WHERE {flow_candidate_where}
ORDER BY lease_order, id LIMIT :limit{skip_locked}

-- name: flow_fair_keys
-- The first fairness keys, in key order, that have WAITING tasks (NULL, the tasks without a
-- key, first): a loose scan of ix_tasks_fair.
SELECT DISTINCT fairness_key FROM tasks WHERE queue_id = :queue_id AND state = :waiting
ORDER BY fairness_key LIMIT :limit

-- name: flow_fair_keys_after
-- `flow_fair_keys` after the key `:after` (the next page of a queue's keys).
SELECT DISTINCT fairness_key FROM tasks
WHERE queue_id = :queue_id AND state = :waiting AND fairness_key > :after
ORDER BY fairness_key LIMIT :limit

-- name: flow_waiting_keys
-- A queue's WAITING ready tasks per concurrency key (the console and waiting_reason).
SELECT concurrency_key, COUNT(*) AS waiting FROM tasks
WHERE queue_id = :queue_id AND state = :waiting AND available_at <= :now
GROUP BY concurrency_key

-- name: flow_update_settings
UPDATE queue_flow SET revision = revision + 1, settings = :settings, updated_at = :now
WHERE queue_id = :queue_id AND revision = :expected

-- name: flow_get
SELECT revision, settings FROM queue_flow WHERE queue_id = :queue_id

-- name: flow_running_key
-- Running tasks of one concurrency key (a task's waiting_reason).
SELECT COUNT(*) AS running FROM tasks
WHERE queue_id = :queue_id AND state IN (:live) AND concurrency_key = :key

-- name: flow_bucket
SELECT level, at AS counted_at FROM flow_counters
WHERE queue_id = :queue_id AND kind = :kind AND flow_key = :key
