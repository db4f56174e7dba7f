-- depends: 0003.snapshots
-- How each game's chain is hashed (docs/event-log.md): games recorded before this migration keep
-- format 1; new games are written in format 2 (payloads and commands blinded until the seed is out).
ALTER TABLE games ADD COLUMN log_format INTEGER NOT NULL DEFAULT 1;
-- What each command id was first used for (sha256 of the seat and the command's bytes), so that a
-- reuse of the id for something else is refused instead of answered with the first answer.
-- Empty for commands recorded before this migration.
ALTER TABLE commands ADD COLUMN fingerprint BLOB;
