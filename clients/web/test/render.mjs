// The page's words that depend on no browser (src/render.ts, run in Node.js): the status line as
// who is to act says it, and how a settlement's factors read. A seat that may only act out of turn
// (battle Hoola's claim on the discard while the next seat is to take) is not told "Your move.":
// the game waits on the other seat, which may take the discard first. A payment's first factor
// sets its amount ("="), as the replay timeline writes it, not "×". A Hoola round's end shows every
// hand with its value. A seat's time is short from 10 s left, or half its step on a shorter clock.
// Prints one JSON line; exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";

const { LOW_TIME_MS, factorLabel, factorSign, handsAtRoundEnd, statusFor, timeIsShort } =
  await loadSource("../src/render.ts");

const claim = statusFor(
  [
    { seat: 1, turn: true },
    { seat: 2, turn: false },
  ],
  2,
  1,
  2,
);
assert.equal(
  claim,
  "Waiting for Seat 1; meanwhile you may act out of turn (your moves below), until they do.",
);
const turn = statusFor(
  [
    { seat: 1, turn: true },
    { seat: 2, turn: false },
  ],
  1,
  2,
  1,
);
assert.equal(turn, "Your move.");
// Any seat may deal the next round: nobody's turn, and this seat may.
assert.equal(
  statusFor(
    [
      { seat: 0, turn: false },
      { seat: 1, turn: false },
    ],
    0,
    1,
    0,
  ),
  "Your move.",
);
assert.equal(statusFor([{ seat: 1, turn: true }], 0, 0, 0), "Waiting for Seat 1…");
assert.equal(statusFor([], 0, 0, 0), "Waiting…");

const signs = [{ added: false }, { added: false }, { added: true }].map((f, i) => factorSign(i, f));
assert.deepEqual(signs, ["=", "×", "+"]);
assert.equal(factorSign(0, { added: true }), "+");
// A liability's added factor is an amount (another loser's payment × the option), not the option:
// "+ stop penalty multiplier 16" read as ×16 at a table that plays ×4.
assert.equal(factorLabel({ name: "stop_penalty_multiplier", added: true }), "stop_penalty");
assert.equal(factorLabel({ name: "unmelded_multiplier", added: false }), "unmelded_multiplier");
assert.equal(factorLabel({ name: "gin_bonus", added: true }), "gin_bonus");

// A Hoola round's end shows every seat's hand and value (a QA review: "seat 2 stopped with 53 but
// another hand was as low" could not be checked on the page), in seat order; nothing before a
// round has ended, nor in another game.
const ended = {
  game: {
    case: "hoola",
    value: {
      lastRound: {
        hands: [
          { seat: 2, cards: [{ code: "KD" }, { code: "7S" }] },
          { seat: 0, cards: [] },
          { seat: 1, cards: [{ code: "3S" }] },
        ],
        handValues: [0, 3, 53],
      },
    },
  },
};
const hands = handsAtRoundEnd(ended);
assert.deepEqual(hands, [
  { seat: 0, value: 0, cards: [] },
  { seat: 1, value: 3, cards: ["3S"] },
  { seat: 2, value: 53, cards: ["KD", "7S"] },
]);
assert.deepEqual(handsAtRoundEnd({ game: { case: "hoola", value: {} } }), []);
assert.deepEqual(handsAtRoundEnd({ game: { case: "gin", value: {} } }), []);

// A seat's time is short from LOW_TIME_MS left, or from half of what the step had when that is
// less (a 12 s turn would warn from its start), however the time left is reached; a deadline
// passed (its time-out not yet recorded) is short too.
const short = [];
for (const stepMs of [4000, 12_000, 20_000, 30_000, 60_000, 90_000 + 45_000]) {
  const from = Math.min(LOW_TIME_MS, stepMs / 2);
  for (let leftMs = stepMs; leftMs >= -1000; leftMs -= 250)
    assert.equal(timeIsShort(leftMs, stepMs), leftMs <= from, `${leftMs} of ${stepMs}`);
  assert.equal(timeIsShort(stepMs, stepMs), false, `a ${stepMs} ms step is not short at its start`);
  short.push([stepMs, from]);
}
assert.equal(LOW_TIME_MS, 10_000);

console.log(JSON.stringify({ claim, turn, signs, hands, short }));
