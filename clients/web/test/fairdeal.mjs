// The page's check of the deal (src/fairdeal.ts, through @croupier/client's checkDeal), without a
// browser: a Hoola round dealt from the first golden vector's seed (tests/golden/
// shuffle_vectors.json: the all-zero seed, no client seed; its deck written out there, its layout
// by hand from docs/shuffle.md, "Hoola's deal": the dealer's seat gets cards 0 to 6, the next seat
// 7 to 13, card 14 is the up-card). The seat's own events pass; a tampered revealed seed, a hand
// other than the one dealt, another dealer, a commitment other than the one shown before the
// game, a game other than the one the lobby asked for fail, each saying why. Prints one JSON
// line; exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadSource } from "./load.mjs";

const { checkSeatDeal } = await loadSource("../src/fairdeal.ts");
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

/** The round's dealer: a game recorded before `first_dealer_drawn` (its rules leave it out) takes
 * the rank of the deck's last card, counted round the seats (docs/shuffle.md, "Hoola's deal"). */
const DEALER = ("A23456789TJQK".indexOf(DECK.at(-1)[0]) + 1) % 2;

/** Seat `seat`'s copy of the events: its own hand (in another order: hands are sorted), the
 * other's hidden; `hand` replaces its cards, `dealer` names another dealer (dealt as such). */
function events(seat, { seed = VECTOR.server_seed, hand, dealer = DEALER } = {}) {
  const dealt = { [dealer]: DECK.slice(0, 7), [1 - dealer]: DECK.slice(7, 14) };
  return [
    hoola(1, "gameStarted", {
      seats: 2,
      rules: { jokers: 0 },
      commitment: VECTOR.commitment,
      clientSeeds: [],
    }),
    hoola(2, "roundDealt", {
      round: 1,
      dealer,
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
  return checkSeatDeal(events(seat, options), seat, expected);
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

const swapped = await check(DEALER, { hand: [...DECK.slice(0, 6), DECK[20]] });
assert.equal(swapped.ok, false);
assert.match(swapped.text, /round 1: the hand you were dealt is not the one the seeds deal you/);
// The card changed is named, with the one the seeds deal in its place.
assert.match(swapped.text, new RegExp(`\\(${DECK[20]} in place of ${DECK[6]}\\)`));
// The dealer decides which cards each seat gets: a dealer other than the one the deck makes,
// dealt as such, fails.
report.swapped = swapped.text;
const otherDealer = await check(0, { dealer: 1 - DEALER });
assert.match(otherDealer.text, /round 1: the dealer is not the one the seeds' deck makes/);
report.hoolaOtherDealer = otherDealer.text;

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
const early = await checkSeatDeal(events(0).slice(0, 3), 0);
assert.equal(early.ok, false);
assert.match(early.text, /cannot be checked yet/);

// The game the lobby asked for (kind, seats, the tab's seat, the preset's rules): another seat
// count, another seat, another kind or another rule fails, though every card is the seeds'.
const { GameKind } = await import("@croupier/client/web");
const asked = { kind: GameKind.HOOLA, seats: 2, seat: 0, rules: { hoola: { jokers: 0 } } };
const sameGame = await check(0, {}, { game: asked });
assert.equal(sameGame.ok, true, sameGame.text);
const otherSeats = await check(0, {}, { game: { ...asked, seats: 3 } });
assert.match(otherSeats.text, /the game seats 2, not the 3 you were shown/);
report.otherSeats = otherSeats.text;
const otherSeat = await check(1, {}, { game: asked });
assert.match(otherSeat.text, /seats you at seat 1, not at seat 0 you were shown/);
const otherKind = await check(0, {}, { game: { ...asked, kind: GameKind.GIN, rules: undefined } });
assert.match(otherKind.text, /the game is Hoola, not the Gin Rummy you were shown/);
const otherRules = await check(0, {}, { game: { ...asked, rules: { hoola: { jokers: 2 } } } });
assert.match(otherRules.text, /rules are not the ones you were shown: jokers is 0, not 2/);
report.otherRules = otherRules.text;
// "Checked" says what it does not cover, so that it is not read as more.
assert.ok(
  (await check(0)).details.some((line) =>
    line.startsWith("Not checked here: the cards drawn from the stock"),
  ),
);

// The first dealer's draw decides which cards each seat gets: a server that shows the seeds' draw
// but names the other seat dealer (and deals as if it did) deals a different hand; the page must
// not pass it. Gin, hand 1, from the same seed: the draw is worked out here by its rule (seat 0
// turns card 0, seat 1 card 1, the lower rank deals, equal ranks turn the next two).
const { shuffleCards, standardDeck, hanafudaDeck } = await import("@croupier/client/web");
const seeds = { serverSeed: VECTOR.server_seed, clientSeeds: [] };
const RANK = "A23456789TJQK";
function drawTwo(turned, order) {
  for (let at = 0; at + 1 < turned.length; at += 2) {
    const [a, b] = [order(turned[at]), order(turned[at + 1])];
    if (a !== b) return { draws: turned.slice(0, at + 2), dealer: a < b ? 0 : 1 };
  }
  throw new Error("ties all through");
}
const gin = (version, kind, value) => ({
  version: BigInt(version),
  body: { body: { case: "gin", value: { event: { case: kind, value } } } },
});
/** Seat `seat`'s copy of a Gin hand 1 dealt from the vector's seed and `clientSeeds`, the dealer
 * the seeds' draw makes unless `otherDealer`. */
async function ginEvents(seat, { otherDealer = false, clientSeeds = [] } = {}) {
  const ginSeeds = { serverSeed: VECTOR.server_seed, clientSeeds };
  const turned = await shuffleCards(standardDeck(), ginSeeds, 1, "first-dealer");
  const draw = drawTwo(turned, (c) => RANK.indexOf(c[0]));
  const deck = await shuffleCards(standardDeck(), ginSeeds, 1, "deal");
  const dealer = otherDealer ? 1 - draw.dealer : draw.dealer;
  const hands = { [1 - dealer]: deck.slice(0, 10), [dealer]: deck.slice(10, 20) };
  return [
    gin(1, "matchStarted", { seats: 2, rules: {}, commitment: VECTOR.commitment, clientSeeds }),
    gin(2, "handDealt", {
      hand: 1,
      dealer,
      upcard: card(deck[20]),
      hands: [0, 1].map((s) => ({
        seat: s,
        cards: s === seat ? hands[s].map(card) : [],
        count: 10,
      })),
      dealerDraws: draw.draws.map((c, i) => ({ seat: i % 2, card: card(c) })),
    }),
    revealed(VECTOR.server_seed),
  ];
}
const checkEvents = (seat, list, expected) => checkSeatDeal(list, seat, expected);
for (const seat of [0, 1]) {
  const honest = await checkEvents(seat, await ginEvents(seat));
  assert.equal(honest.ok, true, honest.text);
  const otherDealer = await checkEvents(seat, await ginEvents(seat, { otherDealer: true }));
  assert.equal(otherDealer.ok, false, "a dealer other than the draw's passed");
  assert.match(otherDealer.text, /the dealer is not the one the seeds' draw makes/);
  report[`ginOtherDealer${seat}`] = otherDealer.text;
}

// The lobby's game has one client seed, the player's, drawn after the server's commitment. A seed
// beside it was chosen by someone who could see the player's (the lobby, the server) and could
// be tried again and again until the deck suited: the player's seed no longer binds the deal.
const mine = { commitment: VECTOR.commitment, clientSeed: "mine" };
const ownOnly = await checkEvents(0, await ginEvents(0, { clientSeeds: ["mine"] }), mine);
assert.equal(ownOnly.ok, true, ownOnly.text);
assert.match(ownOnly.text, /Your own seed, chosen after the server sealed its seed/);
const extra = await checkEvents(0, await ginEvents(0, { clientSeeds: ["mine", "ground"] }), mine);
assert.equal(extra.ok, false, "a client seed beside the player's passed");
assert.match(extra.text, /a client seed besides yours/);
report.extraSeed = extra.text;

// Koi-Koi: a round is dealt again only when its field shows four of a month. A server that
// claims a redeal the seeds' deal did not need picks its deck among two; the page must say so.
const koikoi = (version, kind, value) => ({
  version: BigInt(version),
  body: { body: { case: "koikoi", value: { event: { case: kind, value } } } },
});
const month = (c) => parseInt(c, 10);
const kkTurned = await shuffleCards(hanafudaDeck(), seeds, 1, "first-dealer");
const kkDraw = drawTwo(kkTurned, month);
const fourOfAMonth = (field) =>
  field.some((c) => field.filter((d) => month(d) === month(c)).length === 4);
async function koikoiEvents(seat, redeals) {
  const deck = await shuffleCards(hanafudaDeck(), seeds, 1, redeals ? `redeal-${redeals}` : "deal");
  const dealer = kkDraw.dealer;
  const hands = { [dealer]: deck.slice(0, 8), [1 - dealer]: deck.slice(8, 16) };
  return [
    koikoi(1, "matchStarted", {
      seats: 2,
      rules: {},
      commitment: VECTOR.commitment,
      clientSeeds: [],
    }),
    koikoi(2, "roundDealt", {
      round: 1,
      dealer,
      field: deck.slice(16, 24).map(card),
      hands: [0, 1].map((s) => ({
        seat: s,
        cards: s === seat ? hands[s].map(card) : [],
        count: 8,
      })),
      redeals,
      dealerDraws: kkDraw.draws.map((c, i) => ({ seat: i % 2, card: card(c) })),
    }),
    revealed(VECTOR.server_seed),
  ];
}
const dealt = await shuffleCards(hanafudaDeck(), seeds, 1, "deal");
assert.equal(fourOfAMonth(dealt.slice(16, 24)), false, "the vector's deal needs a redeal");
const kkHonest = await checkEvents(0, await koikoiEvents(0, 0));
assert.equal(kkHonest.ok, true, kkHonest.text);
const kkRedealt = await checkEvents(0, await koikoiEvents(0, 1));
assert.equal(kkRedealt.ok, false, "a redeal the seeds did not need passed");
assert.match(kkRedealt.text, /dealt again though the seeds' deal needed no redeal/);
report.koikoiRedeal = kkRedealt.text;
console.log(JSON.stringify(report));
