// The page's words that depend on no browser (src/render.ts, run in Node.js): the status line as
// who is to act says it, and how a settlement's factors read. A seat that may only act out of turn
// (battle Hoola's claim on the discard while the next seat is to take) is not told "Your move.":
// the game waits on the other seat, which may take the discard first. A payment's first factor
// sets its amount ("="), as the replay timeline writes it, not "×". Prints one JSON line; exits 1
// on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";

const { factorSign, statusFor } = await loadSource("../src/render.ts");

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

console.log(JSON.stringify({ claim, turn, signs }));
