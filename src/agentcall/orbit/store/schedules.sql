-- The statements of the schedule claims (`orbit.store.schedule_claims`, docs/orbit/schedule-firing.md),
-- in the form of `queries.sql` (its header tells the parameters and fragments).

-- name: schedule_columns
-- A schedule's columns but its claim (`claimed_by`, `claim_until`: the claimer sets its own).
s.id, s.namespace_id, s.queue_id, s.revision, s.state, s.note, s.template, s.spec, s.start_at,
s.end_at, s.jitter_ms, s.catchup_window_ms, s.overlap, s.next_fire_at, s.created_at,
s.updated_at, s.last_task_id, s.buffered_at

-- name: reached_schedules
-- Active schedules whose cursor is reached and that are free (no claim, or one that has
-- passed), earliest first, at the database clock (in front of every row): a range of
-- `ix_schedules_due`, locked, skipping those another claimer or a change holds.
SELECT {clock} AS now_at, {schedule_columns} FROM schedules s
WHERE s.state = :active AND s.next_fire_at <= {clock}
  AND (s.claim_until IS NULL OR s.claim_until <= {clock})
ORDER BY s.next_fire_at LIMIT :limit{skip_locked}

-- name: buffered_schedules
-- Active schedules with a slot kept by `buffer_one` that are free: a range of
-- `ix_schedules_buffered` (few rows), locked, skipping those another transaction holds.
SELECT {clock} AS now_at, {schedule_columns} FROM schedules s
WHERE s.buffered_at IS NOT NULL AND s.state = :active
  AND (s.claim_until IS NULL OR s.claim_until <= {clock})
ORDER BY s.buffered_at LIMIT :limit{skip_locked}

-- name: claims_of_schedules
-- The claim and revision of the schedules a claim finishes, locked until its commit.
SELECT s.id, s.claimed_by, s.revision FROM schedules s WHERE s.id IN (:ids){for_update}

-- name: recorded_slots
-- Which of these (schedule, kind, nominal time) slots have a firing record already.
SELECT f.schedule_id, f.kind, f.nominal_at FROM schedule_firings f
WHERE (f.schedule_id, f.kind, f.nominal_at) IN ({rows:slots})
