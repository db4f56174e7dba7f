// Rummy's discard pile as the page keeps it from the events (src/pile.ts), without a browser: the
// round's upcard starts it, each discard goes on top, a taken discard comes off the top, a rebuilt
// stock leaves the top card alone; the cards under the top are shown newest first, and only while
// the pile as told is the view's (its top card and its count), else none (an event the page was not
// sent would make it wrong). Seeded random rounds check it against a plain list of the pile. Prints
// one JSON line; exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";
import { seeded } from "./player.mjs";

const { DiscardPile } = await loadSource("../src/pile.ts");

/** A Rummy event as the stream sends it. */
const rummy = (kind, value) => ({
  body: { body: { case: "rummy", value: { event: { case: kind, value } } } },
});
const card = (code) => ({ code });
const dealt = (upcard) => rummy("roundDealt", { upcard: card(upcard) });
const discarded = (code) => rummy("cardDiscarded", { seat: 0, card: card(code) });
const taken = (code) => rummy("discardTaken", { seat: 1, card: card(code) });
const reshuffled = () => rummy("stockReshuffled", { stock: [], stockCount: 20, reshuffle: 1 });

const pile = new DiscardPile();
for (const event of [
  dealt("7H1"),
  discarded("KS2"),
  discarded("3D1"),
  taken("3D1"),
  discarded("JK1"),
])
  pile.add(event);
assert.deepEqual(pile.under("JK1", 3), ["KS2", "7H1"]);
// Not the view's pile (another top, another count): nothing shown rather than a wrong pile.
assert.equal(pile.under("KS2", 3), undefined);
assert.equal(pile.under("JK1", 4), undefined);
// A rebuilt stock takes every discard but the top.
pile.add(reshuffled());
assert.deepEqual(pile.under("JK1", 1), []);
// Other games' events and the events that do not touch the pile change nothing.
pile.add({
  body: {
    body: { case: "gin", value: { event: { case: "cardDiscarded", value: { card: card("2C") } } } },
  },
});
pile.add(rummy("cardDrawn", { seat: 1 }));
pile.add(rummy("meldsLaidDown", { seat: 1, melds: [] }));
assert.deepEqual(pile.under("JK1", 1), []);
// A new deal starts it again.
pile.add(dealt("4C2"));
assert.deepEqual(pile.under("4C2", 1), []);

// Random rounds: discards, takes of the top (never from an empty pile) and rebuilds, against a
// plain list.
const CODES = ["AS1", "7H2", "QD1", "JK2", "TC1", "5S2"];
let checked = 0;
for (let seed = 1; seed <= 200; seed++) {
  const random = seeded(seed);
  const model = [CODES[seed % CODES.length]];
  const kept = new DiscardPile();
  kept.add(dealt(model[0]));
  for (let step = 0; step < 60; step++) {
    const roll = random();
    if (roll < 0.6) {
      const code = CODES[Math.floor(random() * CODES.length)];
      model.push(code);
      kept.add(discarded(code));
    } else if (roll < 0.9 && model.length) {
      kept.add(taken(model.pop()));
    } else if (model.length) {
      model.splice(0, model.length - 1);
      kept.add(reshuffled());
    }
    assert.deepEqual(kept.under(model.at(-1), model.length), model.slice(0, -1).reverse());
    checked += 1;
  }
}
console.log(JSON.stringify({ checked }));
