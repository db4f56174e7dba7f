// The page's check of the deal (src/fairdeal.ts), without a browser: a Hoola round dealt from the
// first golden vector's seed (tests/golden/shuffle_vectors.json: the all-zero seed, no client
// seed; its deck written out there, its layout by hand from docs/shuffle.md, "Hoola's deal": the
// dealer's seat gets cards 0 to 6, the next seat 7 to 13, card 14 is the up-card). The seat's own
// events pass; a tampered revealed seed, a hand other than the one dealt, a commitment other than
// the one shown before the game fail, each saying why. Prints one JSON line; exits 1 on any
// failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadSource } from "./load.mjs";

const { ShuffleWatcher, checkDeal } = await loadSource("../src/fairdeal.ts");
const VECTOR = JSON.parse(
  readFileSync(new URL("../../../tests/golden/shuffle_vectors.json", import.meta.url), "utf8"),
)[0];
const DECK = VECTOR.deck;
const card = (code) => ({ code, suit: code.slice(-1) });
const hoola = (version, kind, value) => ({
  version: BigInt(version),
  body: { body: { case: "hoola", value: { event: { case: kind, value } } } },
});
const revealed = (seed) => ({
  version: 9n,
  body: { body: { case: "seedRevealed", value: { serverSeed: seed } } },
});

/** Seat `seat`'s copy of the events: its own hand (in another order: hands are sorted), the
 * other's hidden; `hand` replaces its cards. */
function events(seat, { seed = VECTOR.server_seed, hand } = {}) {
  const dealt = [DECK.slice(0, 7), DECK.slice(7, 14)];
  return [
    hoola(1, "gameStarted", {
      seats: 2,
      rules: { jokers: 0 },
      commitment: VECTOR.commitment,
      clientSeeds: [],
    }),
    hoola(2, "roundDealt", {
      round: 1,
      dealer: 0,
      upcard: card(DECK[14]),
      hands: [0, 1].map((s) => ({
        seat: s,
        cards: s === seat ? (hand ?? [...dealt[s]].reverse()).map(card) : [],
        count: 7,
      })),
    }),
    hoola(3, "cardDrawn", { seat: 0, card: card(DECK[15]) }),
    revealed(seed),
  ];
}

async function check(seat, options, expected) {
  const watcher = new ShuffleWatcher(seat);
  for (const event of events(seat, options)) watcher.add(event);
  return checkDeal(watcher.record, seat, expected);
}

const report = {};
for (const seat of [0, 1]) {
  const fair = await check(seat);
  assert.equal(fair.ok, true, fair.text);
  assert.equal(fair.text, "Your dealt hand matches the deck from the sealed seed.");
  report[`seat${seat}`] = fair.text;
}
// A spectator's copy: no hand, the up-card checked.
const watched = await check(undefined);
assert.equal(watched.ok, true, watched.text);

const tampered = await check(0, { seed: "01" + VECTOR.server_seed.slice(2) });
assert.equal(tampered.ok, false);
assert.match(tampered.text, /the revealed seed is not the one sealed at the start/);
report.tampered = tampered.text;

const swapped = await check(0, { hand: [...DECK.slice(0, 6), DECK[20]] });
assert.equal(swapped.ok, false);
assert.match(swapped.text, /round 1: the hand you were dealt is not the one the seeds deal you/);
report.swapped = swapped.text;

// The commit-first flow: the commitment shown before the game, and the player's own seed.
const other = await check(0, {}, { commitment: "ab".repeat(32) });
assert.equal(other.ok, false);
assert.match(other.text, /not the one you were shown before it was created/);
const ownSeed = await check(0, {}, { clientSeed: "mine" });
assert.equal(ownSeed.ok, false);
assert.match(ownSeed.text, /your own seed is not among the game's client seeds/);
const sameCommitment = await check(0, {}, { commitment: VECTOR.commitment.toUpperCase() });
assert.equal(sameCommitment.ok, true, sameCommitment.text);

// Before the reveal: nothing is claimed.
const early = new ShuffleWatcher(0);
for (const event of events(0).slice(0, 3)) early.add(event);
assert.equal((await checkDeal(early.record, 0)).ok, false);
console.log(JSON.stringify(report));
