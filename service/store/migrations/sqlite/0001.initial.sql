-- The event log: one row per event, hash-chained per game (docs/event-log.md).
CREATE TABLE games (
    game_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    seats INTEGER NOT NULL,
    server_seed BLOB NOT NULL,
    commitment TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    version INTEGER NOT NULL,
    finished INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE events (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    version INTEGER NOT NULL,
    command_id TEXT NOT NULL,
    seat INTEGER,
    recorded_at_ms INTEGER NOT NULL,
    type TEXT NOT NULL,
    payload BLOB NOT NULL,
    -- The command that produced this batch of events (on its first event only; else empty).
    command BLOB NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (game_id, version)
);

-- Every command's first result, accepted or rejected: a retry returns it.
CREATE TABLE commands (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    command_id TEXT NOT NULL,
    accepted INTEGER NOT NULL,
    first_version INTEGER NOT NULL,
    last_version INTEGER NOT NULL,
    rejection BLOB,
    PRIMARY KEY (game_id, command_id)
);
