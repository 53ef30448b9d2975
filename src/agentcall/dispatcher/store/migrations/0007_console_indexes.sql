-- 0007: the console's reads stay proportional to what they show, however long the history:
-- calls finalized in the last hours (by when they ended), the newest results, and the
-- commands of the last hour.
CREATE INDEX executions_finalized_ended ON executions (ended_at) WHERE state = 'finalized';
CREATE INDEX executions_finalized_at ON executions (finalized_at) WHERE state = 'finalized';
CREATE INDEX inbox_received ON inbox (received_at);
