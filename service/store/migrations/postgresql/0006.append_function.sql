-- depends: 0005.deadlines
-- An append in one statement, for a replica that knows where the game's chain ends (it made or
-- read the last append): the checks of SqlEventStore.append (the game's row locked, the command
-- id's earlier answer, the expected version, the hash the new events were chained onto), then
-- its writes (the events, the command's answer, the game's new version, the NOTIFY). Made on its
-- own (autocommit) it is its own transaction and one round trip, where reading first and writing
-- after takes four with BEGIN and COMMIT.
-- Anything but 'appended' writes nothing, and the caller makes the append the general way
-- (which answers a retry, a conflict or an unknown game as it always has).
CREATE FUNCTION croupier_append(
    p_game_id TEXT,
    p_expected BIGINT,
    p_prev_hash TEXT,
    p_genesis_hash TEXT,
    p_command_id TEXT,
    p_seat INTEGER,
    p_recorded_at_ms BIGINT,
    p_types TEXT[],
    p_payloads BYTEA[],
    p_commands BYTEA[],
    p_prev_hashes TEXT[],
    p_hashes TEXT[],
    p_fingerprint BYTEA,
    p_finished BOOLEAN,
    p_next_deadline_ms BIGINT,
    p_channel TEXT,
    p_notice TEXT
) RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
    v_current BIGINT;
    v_last_hash TEXT;
    v_last BIGINT := p_expected + coalesce(array_length(p_types, 1), 0);
BEGIN
    SELECT version INTO v_current FROM games WHERE game_id = p_game_id FOR UPDATE;
    IF NOT FOUND THEN
        RETURN 'unknown_game';
    END IF;
    IF EXISTS (
        SELECT 1 FROM commands WHERE game_id = p_game_id AND command_id = p_command_id
    ) THEN
        RETURN 'seen_command';
    END IF;
    IF v_current <> p_expected THEN
        RETURN 'other_version';
    END IF;
    SELECT hash INTO v_last_hash FROM events WHERE game_id = p_game_id AND version = v_current;
    IF coalesce(v_last_hash, p_genesis_hash) <> p_prev_hash THEN
        RETURN 'other_hash';
    END IF;
    INSERT INTO events (
        game_id, version, command_id, seat, recorded_at_ms, type, payload, prev_hash, hash, command
    )
    SELECT p_game_id, p_expected + e.n, p_command_id, p_seat, p_recorded_at_ms, e.type,
        e.payload, e.prev_hash, e.hash, e.command
    FROM unnest(p_types, p_payloads, p_prev_hashes, p_hashes, p_commands)
        WITH ORDINALITY AS e (type, payload, prev_hash, hash, command, n);
    INSERT INTO commands (
        game_id, command_id, accepted, first_version, last_version, rejection, fingerprint
    ) VALUES (p_game_id, p_command_id, TRUE, p_expected + 1, v_last, NULL, p_fingerprint);
    UPDATE games SET
        version = v_last,
        finished = p_finished,
        finished_at_ms = CASE WHEN p_finished THEN p_recorded_at_ms END,
        next_deadline_ms = CASE WHEN p_finished THEN NULL ELSE p_next_deadline_ms END,
        sweep_lease_ms = 0
    WHERE game_id = p_game_id;
    PERFORM pg_notify(p_channel, p_notice);
    RETURN 'appended';
END
$$;
