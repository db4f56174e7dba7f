-- The event log: one row per event, hash-chained per game (docs/event-log.md).
CREATE TABLE games (
    game_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    seats INTEGER NOT NULL,
    server_seed BYTEA NOT NULL,
    commitment TEXT NOT NULL,
    created_at_ms BIGINT NOT NULL,
    version BIGINT NOT NULL,
    finished BOOLEAN NOT NULL DEFAULT FALSE
);

CREATE TABLE events (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    version BIGINT NOT NULL,
    command_id TEXT NOT NULL,
    seat INTEGER,
    recorded_at_ms BIGINT NOT NULL,
    type TEXT NOT NULL,
    payload BYTEA NOT NULL,
    -- The command that produced this batch of events (on its first event only; else empty).
    command BYTEA NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL,
    PRIMARY KEY (game_id, version)
);

-- Every command's first result, accepted or rejected: a retry returns it.
CREATE TABLE commands (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    command_id TEXT NOT NULL,
    accepted BOOLEAN NOT NULL,
    first_version BIGINT NOT NULL,
    last_version BIGINT NOT NULL,
    rejection BYTEA,
    PRIMARY KEY (game_id, command_id)
);
