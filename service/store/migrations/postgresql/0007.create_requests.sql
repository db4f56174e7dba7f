-- depends: 0006.append_function
-- The studio's request ids of CreateGame: a retry after a lost answer gets the game its first
-- attempt made (with that game's version when made), and the same id for another request is
-- told by its fingerprint (a hash of the request). The primary key decides between attempts made
-- at once.
CREATE TABLE create_requests (
    request_id TEXT PRIMARY KEY,
    game_id TEXT NOT NULL REFERENCES games (game_id),
    version BIGINT NOT NULL,
    fingerprint BYTEA NOT NULL
);
