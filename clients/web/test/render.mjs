// The page's words that depend on no browser (src/render.ts, run in Node.js): the status line as
// who is to act says it, and how a settlement's factors read. A seat that may only act out of turn
// (battle Hoola's claim on the discard while the next seat is to take) is not told "Your move.":
// the game waits on the other seat, which may take the discard first. A payment's first factor
// sets its amount ("="), as the replay timeline writes it, not "×". A Hoola round's end shows every
// hand with its value. A seat's time is short from 10 s left, or half its step on a shorter clock.
// Prints one JSON line; exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";

const {
  LOW_TIME_MS,
  betweenRoundsStatus,
  factorLabel,
  factorWords,
  factorSign,
  handsAtRoundEnd,
  statusFor,
  timeIsShort,
  timeLeft,
} = await loadSource("../src/render.ts");
const { prettyLabel } = await loadSource("../src/cards.ts");

// One notation in one label: Gin's knock names its discard at length and its melds by code.
const labels = [
  "Discard Four of clubs and knock, melding 3C 3D 3S",
  "Discard Ten of hearts",
  "Lay off Joker 1 onto meld 2",
  "Discard QD",
  "left in hand: 6D2 5S1",
].map(prettyLabel);

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

// Between rounds any seat may deal: a lobby bot on the clock for it never does, and the player
// was told "Waiting for Seat 1" for ever. Now: deal when ready, and why nobody else will.
const botDeals = betweenRoundsStatus([1], new Set([1]), 0, "round");
assert.equal(
  botDeals,
  "The round is over: deal the next one when you are ready (your moves below). Seat 1 is a bot: bots leave the next deal to people.",
);
assert.doesNotMatch(botDeals, /Waiting/);
assert.match(
  betweenRoundsStatus([1], new Set(), 0, "hand"),
  /hand is over.*Seat 1 may deal it too\.$/,
);
assert.equal(
  betweenRoundsStatus([], new Set([1]), 0, "round"),
  "The round is over: deal the next one when you are ready (your moves below).",
);

// The time left holds the bank: "0:05 left, bank 0:05" read as ten seconds.
const times = {
  turnAndBank: timeLeft(35_000, 5_000),
  allBank: timeLeft(4_200, 5_000),
  noBank: timeLeft(30_000, 0),
};
assert.deepEqual(times.turnAndBank, {
  shown: "to act: 0:35 left (0:30 turn + 0:05 bank)",
  spoken: "35 seconds left to act: 30 seconds of the turn, then 5 seconds from the bank",
});
assert.deepEqual(times.allBank, {
  shown: "to act: 0:05 left, all bank",
  spoken: "5 seconds left to act, all of it from the bank",
});
assert.deepEqual(times.noBank, { shown: "to act: 0:30 left", spoken: "30 seconds left to act" });
assert.equal(timeLeft(65_000, 0).spoken, "1 minute 5 seconds left to act");

const signs = [{ added: false }, { added: false }, { added: true }].map((f, i) => factorSign(i, f));
assert.deepEqual(signs, ["=", "×", "+"]);
// A table's close pays one added factor, its balance: it sets the amount ("+ 2" read as added to
// something unsaid).
assert.equal(factorSign(0, { added: true }), "=");
// A liability's added factor is an amount (another loser's payment × the option), not the option:
// "+ stop penalty multiplier 16" read as ×16 at a table that plays ×4.
assert.equal(factorLabel({ name: "stop_penalty_multiplier", added: true }), "stop_penalty");
assert.equal(factorLabel({ name: "unmelded_multiplier", added: false }), "unmelded_multiplier");
assert.equal(factorLabel({ name: "gin_bonus", added: true }), "gin_bonus");
assert.equal(
  factorWords({ name: "table_balance", added: true }),
  "balance paid at the table's close",
);
assert.equal(factorWords({ name: "stop_penalty_multiplier", added: true }), "stop penalty");

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

console.log(
  JSON.stringify({
    betweenRounds: botDeals,
    times,
    claim,
    turn,
    signs,
    hands,
    short,
    labels,
  }),
);
