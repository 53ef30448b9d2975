-- 0004: /status counts the outbox without scanning its bodies.
-- pending rows are served by outbox_pending, blocked ones by this index, and delivered is
-- the total (a count over the event_id index) minus both: the CHECK on state allows no other.
CREATE INDEX outbox_blocked ON outbox (seq) WHERE state = 'blocked_payload_too_large';
