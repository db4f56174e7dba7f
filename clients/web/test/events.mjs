// The event log's words (src/events.ts), without a browser: a Gin hand where seat 0 times out and
// the service plays for it, then the hand's end. The deal is nobody's, a time-out is the seat's
// with the time on the clock, its forced moves are the seat's and say "forced", and what follows
// from a command (the hand's end) is not credited to the seat that sent it. Prints one JSON line
// (the lines); exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";

const { EventNarrator, clockTime } = await loadSource("../src/events.ts");

const ME = 0;
const DEADLINE = 1796582848426n;
/** A Gin event as the stream sends it: `seat` is the commanding seat (unset: the service's). */
const gin = (version, seat, kind, value) => ({
  version: BigInt(version),
  seat,
  body: { body: { case: "gin", value: { event: { case: kind, value } } } },
});
const card = (code) => ({ code, name: "", suit: code.slice(-1) });
const EVENTS = [
  gin(1, undefined, "matchStarted", { seats: 2, commitment: "ab".repeat(32), clientSeeds: ["x"] }),
  gin(2, undefined, "handDealt", {
    hand: 1,
    dealer: 1,
    upcard: card("QH"),
    dealerDraws: [
      { seat: 0, card: card("8C") },
      { seat: 1, card: card("4D") },
    ],
  }),
  gin(3, 1, "upcardPassed", { seat: 1 }),
  gin(4, undefined, "turnTimedOut", { seat: 0, deadlineMs: DEADLINE, away: false }),
  gin(5, undefined, "upcardPassed", { seat: 0 }),
  gin(6, 1, "cardDrawn", { seat: 1, fromDiscard: false }),
  gin(7, 1, "cardDiscarded", { seat: 1, card: card("JD") }),
  gin(8, undefined, "turnTimedOut", { seat: 0, deadlineMs: DEADLINE + 30_000n, away: true }),
  gin(9, undefined, "cardDrawn", { seat: 0, card: card("7S"), fromDiscard: false }),
  gin(10, undefined, "cardDiscarded", { seat: 0, card: card("QC") }),
  gin(11, 1, "knocked", {
    seat: 1,
    card: card("6D"),
    deadwood: 5,
    deadwoodCards: [card("2C"), card("3D")],
    melds: [],
  }),
  gin(12, 1, "handEnded", { hand: 1, outcome: "KNOCK", winner: 1, points: 27, deadwood: [32, 5] }),
  gin(13, 1, "matchEnded", { hands: 1 }),
];

const narrator = new EventNarrator(ME);
const lines = EVENTS.map((event) => narrator.describe(event));
const text = lines.map((line) => line.text);
const at = (ms) => clockTime(ms);

assert.equal(text[0], "The match starts, with 2 seats");
assert.equal(
  text[1],
  "Hand 1 is dealt, Seat 1 dealing; drawn for the deal: Seat 0 (you) 8♣, Seat 1 4♦; first card up: Q♥",
);
assert.equal(text[2], "Seat 1 passes on the upcard");
assert.equal(text[3], `Seat 0 (you) ran out of time at ${at(DEADLINE)}`);
assert.equal(text[4], "Seat 0 (you), forced: passes on the upcard");
assert.equal(text[5], "Seat 1 draws from the stock");
assert.equal(text[6], "Seat 1 discards J♦");
assert.match(text[7], /^Seat 0 \(you\) ran out of time at .*; you are away now/);
assert.equal(text[8], "Seat 0 (you), forced: draws 7♠ from the stock");
assert.equal(text[9], "Seat 0 (you), forced: discards Q♣");
// The knocker's unmatched cards, face up with its melds.
assert.equal(text[10], "Seat 1 knocks, discarding 6♦, with 5 deadwood: 2♣ 3♦");
assert.equal(text[11], "Hand 1 ends: knock, won by Seat 1 (27 points)");
assert.equal(text[12], "The match is over after 1 hand");
assert.deepEqual(
  lines.map((line) => line.forced),
  EVENTS.map((_, i) => [4, 8, 9].includes(i)),
);
assert.deepEqual(
  lines.map((line) => line.about),
  [undefined, undefined, 1, 0, 0, 1, 1, 0, 0, 0, 1, undefined, undefined],
);
// Never the raw words of the messages: no "Dealer", no hash, no field names.
for (const line of text) assert.doesNotMatch(line, /Dealer|commitment|[0-9a-f]{32}|deadline ms|\[/);
// The studio's end of a game (EndGame): the service's, with the studio's reason.
const ending = new EventNarrator(ME).describe(
  gin(14, undefined, "studioEndedGame", { reason: "every player left" }),
);
assert.equal(ending.text, "The studio ends the game (every player left): what was scored stands");
assert.equal(ending.about, undefined);
console.log(JSON.stringify({ lines: text }));
