-- 0006: the grant issued for a recording, kept until the cell answers about it, so that a
-- restarted D hands the same grant over again instead of issuing a new one (D-NOTE-7).
ALTER TABLE recordings ADD COLUMN grant_url TEXT;
