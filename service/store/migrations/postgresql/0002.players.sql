-- depends: 0001.initial
-- Who sat where (opaque player ids a studio gives at creation), and when a game finished: a
-- player's recent games are recalled by these.
CREATE TABLE game_players (
    game_id TEXT NOT NULL REFERENCES games (game_id),
    seat INTEGER NOT NULL,
    player TEXT NOT NULL,
    PRIMARY KEY (game_id, seat)
);

CREATE INDEX game_players_by_player ON game_players (player);

ALTER TABLE games ADD COLUMN finished_at_ms BIGINT;
