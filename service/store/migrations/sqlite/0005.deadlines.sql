-- depends: 0004.log_format_and_fingerprints
-- When each unfinished game next has something due by time alone (a turn's deadline, a claim
-- window's close), as its log makes it: an index for the sweeper, rewritten with every append
-- (NULL: nothing due). The lease keeps two replicas from sweeping one game at once; an append
-- clears it.
ALTER TABLE games ADD COLUMN next_deadline_ms INTEGER;
ALTER TABLE games ADD COLUMN sweep_lease_ms INTEGER NOT NULL DEFAULT 0;
CREATE INDEX games_next_deadline ON games (next_deadline_ms) WHERE next_deadline_ms IS NOT NULL;
