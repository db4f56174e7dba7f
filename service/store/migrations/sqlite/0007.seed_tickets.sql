-- depends: 0006.create_requests
-- The seed tickets (CommitSeed) that made a game: the primary key lets a ticket make one game,
-- on any replica. Written in the transaction that creates the game; a record is forgotten an
-- hour after its ticket expired (an expired ticket is refused before it is looked for here).
-- Tickets asked for and never used are never written (docs/shuffle.md, "Seed tickets").
CREATE TABLE seed_tickets (
    ticket_id TEXT PRIMARY KEY,
    game_id TEXT NOT NULL REFERENCES games (game_id),
    expires_at_ms INTEGER NOT NULL
);
CREATE INDEX seed_tickets_expiry ON seed_tickets (expires_at_ms);
