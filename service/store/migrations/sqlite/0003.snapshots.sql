-- depends: 0002.players
-- A cache of folded games, so that the first read after a restart folds only the newest events.
-- Never a source of truth: a snapshot of another format, or one whose seal does not verify, is
-- ignored and the game is folded from its log.
CREATE TABLE snapshots (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    format TEXT NOT NULL,
    version INTEGER NOT NULL,
    state BLOB NOT NULL,
    seal TEXT NOT NULL,
    PRIMARY KEY (game_id, format)
);
