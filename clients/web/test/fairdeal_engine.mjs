// The page's check of the deal (src/fairdeal.ts, through @croupier/client's checkDeal) on deals
// the server's engine made: the file named by the first argument holds games (tests/web/
// test_web.py writes them from engine/*/deal.py with random seeds: every kind, every seat count,
// Hoola's jokers, Koi-Koi rounds dealt again, first dealers drawn and later rounds' dealers
// given). Each seat's own copy of the events, and a spectator's, must pass: a page that lays a
// deal out otherwise than the engine would cry foul on an honest game. Prints one JSON line (how
// many copies passed); exits 1 on any failure.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadSource } from "./load.mjs";

const { checkSeatDeal } = await loadSource("../src/fairdeal.ts");
const { GameKind } = await import("@croupier/client/web");
/** The kinds as the games' file names them. */
const KINDS = {
  hoola: GameKind.HOOLA,
  koikoi: GameKind.KOIKOI,
  gin: GameKind.GIN,
  rummy: GameKind.RUMMY,
};
const games = JSON.parse(readFileSync(process.argv[2], "utf8"));

/** One event of `kind`, its body `value` under the case `name`. */
const event = (version, kind, name, value) => ({
  version: BigInt(version),
  body: { body: { case: kind, value: { event: { case: name, value } } } },
});

/** Seat `seat`'s copy: its own hand's cards, the others' hidden (undefined: a spectator's). */
function copy(game, seat) {
  const events = [
    event(1, game.kind, game.start, {
      seats: game.seats,
      rules: game.rules,
      commitment: game.commitment,
      clientSeeds: game.clientSeeds,
    }),
  ];
  for (const deal of game.deals) {
    const value = {
      ...deal.value,
      hands: deal.value.hands.map((h) => ({ ...h, cards: h.seat === seat ? h.cards : [] })),
    };
    events.push(event(events.length + 1, game.kind, deal.case, value));
  }
  events.push({
    version: BigInt(events.length + 1),
    body: { body: { case: "seedRevealed", value: { serverSeed: game.seed } } },
  });
  return events;
}

const passed = {};
for (const game of games) {
  for (const seat of [...Array(game.seats).keys(), undefined]) {
    // The lobby's flow holds a game to its one client seed, the player's, and to the game asked
    // for: its kind, its seats, the player's seat.
    const expected = {
      ...(game.clientSeeds.length === 1 ? { clientSeed: game.clientSeeds[0] } : {}),
      ...(seat === undefined ? {} : { game: { kind: KINDS[game.kind], seats: game.seats, seat } }),
    };
    const check = await checkSeatDeal(copy(game, seat), seat, expected);
    assert.equal(
      check.ok,
      true,
      `${game.kind}, ${game.seats} seats, seat ${seat}: ${check.details.join(" | ")}`,
    );
    passed[game.kind] = (passed[game.kind] ?? 0) + 1;
  }
}
console.log(JSON.stringify({ passed }));
