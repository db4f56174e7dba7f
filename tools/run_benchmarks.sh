#!/usr/bin/env bash
# The runs behind BENCHMARKS.md: croupier load --baseline on SQLite and PostgreSQL at 1, 16 and 64
# games in flight, and 10,000 open streams (at 16 and at 4 games in flight). Each run's full
# report goes to bench-results/*.json.
#   tools/run_benchmarks.sh [SECONDS] [POSTGRES_URL]
# A run that fails (croupier load exits 1: its FAILED line says why) is measured all the same:
# the others go on.
set -uo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_RUN=${1:-20}
POSTGRES=${2:-postgresql://postgres@127.0.0.1:5432/test}
OUT=bench-results
mkdir -p "$OUT"
# The spawned servers' listeners (serve --listeners; a server of its own on this machine may share
# its port between them). BENCHMARKS.md says which runs had how many.
export CROUPIER_LISTENERS=${CROUPIER_LISTENERS:-16}
LOAD=".venv/bin/croupier load --spawn --quiet --duration $SECONDS_PER_RUN"
for flight in 1 16 64; do
  $LOAD --games-in-flight "$flight" --baseline --json "$OUT/sqlite-$flight.json" > "$OUT/sqlite-$flight.txt"
  $LOAD --games-in-flight "$flight" --baseline --store "$POSTGRES" --json "$OUT/postgres-$flight.json" \
    > "$OUT/postgres-$flight.txt"
done
# 64 games on 16 connections (4 by default, a game's seats sharing one): new games' streams are
# dealt over more of the server's listeners, so that more of the 64 are in play at once.
$LOAD --games-in-flight 64 --channels 16 --json "$OUT/sqlite-64-channels-16.json" \
  > "$OUT/sqlite-64-channels-16.txt"
$LOAD --games-in-flight 64 --channels 16 --store "$POSTGRES" --json "$OUT/postgres-64-channels-16.json" \
  > "$OUT/postgres-64-channels-16.txt"
$LOAD --games-in-flight 16 --mode submit --json "$OUT/sqlite-submit-16.json" > "$OUT/sqlite-submit-16.txt"
$LOAD --games-in-flight 16 --streams 10000 --json "$OUT/streams-10000.json" > "$OUT/streams-10000.txt"
$LOAD --games-in-flight 4 --streams 10000 --json "$OUT/streams-10000-4.json" \
  > "$OUT/streams-10000-4.txt"
# The same 10,000 held as browsers hold them: Connect over HTTP/1.1 on the HTTP listener.
$LOAD --games-in-flight 4 --streams 10000 --streams-over connect \
  --json "$OUT/streams-10000-connect-4.json" > "$OUT/streams-10000-connect-4.txt"
echo "wrote $OUT/"
