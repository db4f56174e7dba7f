// checkDeal against the deal vectors (tests/golden/deal_vectors.json, made by
// tools/make_deal_vectors.py from the compatibility corpus's games and held to them by
// tests/test_deal_vectors.py): each game as its seats received it, complete and per seat as sent
// during play. A fair game passes from every copy; a card changed in any hand dealt, another
// commitment, other client seeds, another game than the one shown each fail, saying where; a game
// not over yet cannot be checked yet.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { readGolden } from "./golden.js";
import {
  clearField,
  create,
  fromJson,
  type DescMessage,
  type JsonValue,
  type MessageShape,
} from "@bufbuild/protobuf";
import {
  checkDeal,
  DEAL,
  FIRST_DEALER,
  GameEventSchema,
  GameKind,
  gameStartOf,
  GinRulesSchema,
  hanafudaDeck,
  HoolaRulesSchema,
  KoiKoiRulesSchema,
  redealPurpose,
  reshufflePurpose,
  RulesSchema,
  rummyDeck,
  RummyRulesSchema,
  SIT_OUT,
  standardDeck,
  type DealCheckOptions,
  type GameEvent,
} from "../src/index.js";

type KindName = "hoola" | "koikoi" | "gin" | "rummy";

interface Vector {
  readonly name: string;
  readonly kind: KindName;
  readonly seats: number;
  /** "complete", "spectator", "seat 0", "seat 1"…: the events in protobuf's JSON. */
  readonly copies: Readonly<Record<string, JsonValue[]>>;
}

interface Golden {
  /** Per kind: each option added later, with what a first event that leaves it out means. */
  readonly added_later: Readonly<Record<KindName, Readonly<Record<string, number | boolean>>>>;
  readonly games: readonly Vector[];
}

const GOLDEN: Golden = readGolden<Golden>("deal_vectors.json");

const KINDS: Readonly<Record<KindName, GameKind>> = {
  hoola: GameKind.HOOLA,
  koikoi: GameKind.KOIKOI,
  gin: GameKind.GIN,
  rummy: GameKind.RUMMY,
};
const RULES: Readonly<Record<KindName, DescMessage>> = {
  hoola: HoolaRulesSchema,
  koikoi: KoiKoiRulesSchema,
  gin: GinRulesSchema,
  rummy: RummyRulesSchema,
};

/** A copy's events, fresh messages each time (a test may change them). */
function eventsOf(vector: Vector, copy: string): GameEvent[] {
  const events = vector.copies[copy];
  assert.ok(events, `${vector.name} has a copy "${copy}"`);
  return events.map((e) => fromJson(GameEventSchema, e));
}

/** The seat whose copy it is ("complete" and "spectator": undefined). */
const seatOf = (copy: string): number | undefined =>
  copy.startsWith("seat ") ? Number(copy.slice("seat ".length)) : undefined;

/** Everything the player was shown, as the game's own first event has it: nothing differs. */
function shownAsPlayed(events: readonly GameEvent[], seat: number | undefined): DealCheckOptions {
  const start = events.map(gameStartOf).find(Boolean);
  assert.ok(start, "the copy holds the game's first event");
  return {
    seat,
    commitment: start.commitment,
    clientSeeds: start.clientSeeds,
    game: { kind: start.kind, seats: start.seats, seat, rules: start.rules },
  };
}

/** A deal event's deal message (every kind's has `hands`, `dealer`, `dealerDraws`). */
function dealOf(event: GameEvent) {
  const body = event.body?.body;
  switch (body?.case) {
    case "hoola":
    case "rummy":
      return body.value.event.case === "roundDealt" ? body.value.event.value : undefined;
    case "koikoi":
      return body.value.event.case === "roundDealt" ? body.value.event.value : undefined;
    case "gin":
      return body.value.event.case === "handDealt" ? body.value.event.value : undefined;
  }
  return undefined;
}

/** The deal's round as the check names it (Gin: the hand; Rummy deals once). */
function roundOf(event: GameEvent): number {
  const deal = dealOf(event);
  assert.ok(deal);
  return "round" in deal ? deal.round : "hand" in deal ? deal.hand : 1;
}

function deckOf(kind: KindName): string[] {
  return kind === "koikoi" ? hanafudaDeck() : kind === "rummy" ? rummyDeck() : standardDeck(2);
}

/** A first event in protobuf's JSON: `body.<kind>.<gameStarted | matchStarted>.rules`. */
interface FirstEventJson {
  readonly body: Record<string, Record<string, { rules: Record<string, JsonValue> }>>;
}

/** The first event's name in each kind's events (proto JSON). */
const startName = (kind: KindName): string =>
  kind === "hoola" || kind === "rummy" ? "gameStarted" : "matchStarted";

/** The copies that hold hands: the complete one and each seat's. */
const handCopies = (vector: Vector) => Object.keys(vector.copies).filter((c) => c !== "spectator");

describe("checkDeal on the deal vectors", () => {
  test("the vectors hold every kind, complete copies and every seat's", () => {
    assert.deepEqual(new Set(GOLDEN.games.map((g) => g.kind)), new Set(Object.keys(KINDS)));
    for (const vector of GOLDEN.games)
      assert.equal(Object.keys(vector.copies).length, vector.seats + 2, vector.name);
  });

  test("a fair game passes from every copy, held to everything its players were shown", async () => {
    for (const vector of GOLDEN.games)
      for (const copy of Object.keys(vector.copies)) {
        const events = eventsOf(vector, copy);
        const check = await checkDeal(events, shownAsPlayed(events, seatOf(copy)));
        const where = `${vector.name}, ${copy}`;
        assert.equal(check.status, "passed", `${where}: ${check.text}`);
        assert.ok(check.ok);
        assert.deepEqual(check.failed, []);
        assert.deepEqual(
          check.passed.map((line) => line.part),
          ["commitment", "client-seeds", "game", "seed", "deals"],
          where,
        );
        // What a seat's copy cannot show is said, never claimed.
        assert.deepEqual(
          check.unchecked.map((line) => line.part),
          ["play"],
          where,
        );
        if (seatOf(copy) !== undefined)
          assert.match(check.text, /^Your dealt hand matches the deck from the sealed seed/);
        assert.match(check.text, /Your own seed, chosen after the server sealed its seed/);
      }
  });

  test("without what the player was shown, the deal is still checked and the rest said unchecked", async () => {
    const vector = GOLDEN.games[0]!;
    const check = await checkDeal(eventsOf(vector, "seat 0"), { seat: 0 });
    assert.equal(check.status, "passed", check.text);
    assert.deepEqual(
      check.unchecked.map((line) => line.part),
      ["commitment", "client-seeds", "game", "play"],
    );
    assert.doesNotMatch(check.text, /own seed/);
  });

  test("a card changed in any hand dealt fails, naming the card, the seat and the deal", async () => {
    let changed = 0;
    for (const vector of GOLDEN.games)
      for (const copy of handCopies(vector)) {
        const count = eventsOf(vector, copy).length;
        for (let at = 0; at < count; at++) {
          const hands = dealOf(eventsOf(vector, copy)[at]!)?.hands ?? [];
          for (let h = 0; h < hands.length; h++) {
            if (!hands[h]!.cards.length) continue; // hidden in this copy
            const events = eventsOf(vector, copy);
            const event = events[at]!;
            const hand = dealOf(event)!.hands[h]!;
            const slot = Math.floor(hand.cards.length / 2);
            const old = hand.cards[slot]!.code;
            const other = deckOf(vector.kind).find((c) => !hand.cards.some((k) => k.code === c));
            assert.ok(other);
            hand.cards[slot]!.code = other;
            const check = await checkDeal(events, shownAsPlayed(events, seatOf(copy)));
            const where = `${vector.name}, ${copy}, event ${event.version}, seat ${hand.seat}`;
            assert.equal(check.status, "failed", where);
            assert.equal(check.failed.length, 1, `${where}: ${check.text}`);
            const [failure] = check.failed;
            assert.equal(failure!.part, "hand", where);
            assert.equal(failure!.version, event.version, where);
            assert.equal(failure!.round, roundOf(event), where);
            assert.equal(failure!.seat, hand.seat, where);
            assert.deepEqual([failure!.shown, failure!.derived], [[other], [old]], where);
            assert.ok(
              check.text.includes(`${other} in place of ${old}`),
              `${where}: ${check.text}`,
            );
            changed++;
          }
        }
      }
    assert.ok(changed >= 80, `${changed} hands changed`);
  });

  test("a seat's own hand is named as theirs, another seat's by its number", async () => {
    const vector = GOLDEN.games.find((g) => g.kind === "gin")!;
    for (const [copy, seat] of [
      ["seat 1", 1],
      ["complete", 0],
    ] as const) {
      const events = eventsOf(vector, copy);
      const deal = events.map(dealOf).find(Boolean)!;
      const hand = deal.hands.find((h) => h.seat === seat)!;
      hand.cards[0]!.code = standardDeck().find((c) => !hand.cards.some((k) => k.code === c))!;
      const check = await checkDeal(events, { seat: seatOf(copy) });
      assert.match(
        check.text,
        copy === "complete"
          ? /hand 1: seat 0's hand is not the one the seeds deal it/
          : /hand 1: the hand you were dealt is not the one the seeds deal you/,
      );
    }
  });

  test("a hand in another order is the same hand", async () => {
    const vector = GOLDEN.games[0]!;
    const events = eventsOf(vector, "complete");
    for (const deal of events.map(dealOf))
      for (const hand of deal?.hands ?? []) hand.cards.reverse();
    assert.equal((await checkDeal(events, { seat: undefined })).status, "passed");
  });

  test("another up-card or another Koi-Koi field fails, naming it", async () => {
    for (const vector of GOLDEN.games) {
      const events = eventsOf(vector, "seat 0");
      const event = events.find((e) => dealOf(e))!;
      const deal = dealOf(event)!;
      if ("upcard" in deal && deal.upcard) {
        deal.upcard.code = deal.upcard.code === "AS" ? "2S" : "AS";
        const check = await checkDeal(events, { seat: 0 });
        assert.equal(check.failed[0]?.part, "upcard", vector.name);
        assert.equal(check.failed[0]?.version, event.version);
        assert.ok(check.text.includes(`up-card is ${deal.upcard.code}`), check.text);
      }
      if ("field" in deal) {
        const shown = deal.field.map((c) => c.code);
        const other = hanafudaDeck().find((c) => !shown.includes(c))!;
        const old = deal.field[0]!.code;
        deal.field[0]!.code = other;
        const check = await checkDeal(events, { seat: 0 });
        assert.equal(check.failed[0]?.part, "field", vector.name);
        assert.ok(check.text.includes(`${other} in place of ${old}`), check.text);
      }
    }
  });

  test("the first dealer: another dealer, or other cards turned, fails", async () => {
    for (const vector of GOLDEN.games) {
      const events = eventsOf(vector, "complete");
      const first = dealOf(events.find((e) => dealOf(e))!)!;
      const drawn = first.dealerDraws.length > 0;
      first.dealer = (first.dealer + 1) % vector.seats;
      const check = await checkDeal(events, { seat: undefined });
      const failure = check.failed.find((f) => f.part === "first-dealer");
      assert.ok(failure, `${vector.name}: ${check.text}`);
      assert.match(
        failure.text,
        drawn
          ? /the dealer is not the one the seeds' draw makes/
          : /the dealer is not the one the seeds' deck makes/,
      );
      if (!drawn) continue;
      const again = eventsOf(vector, "spectator");
      const draw = dealOf(again.find((e) => dealOf(e))!)!.dealerDraws[0]!;
      draw.card!.code = draw.card!.code === "AS" ? "2S" : "AS";
      const turned = await checkDeal(again, { seat: undefined });
      assert.match(turned.text, /the cards turned for the first dealer are not the seeds'/);
    }
  });

  test("a Koi-Koi round dealt again only as often as its field showed four of a month", async () => {
    const vector = GOLDEN.games.find((g) => g.name === "koikoi-redealt")!;
    for (const redeals of [0, 2]) {
      const events = eventsOf(vector, "seat 0");
      const deal = dealOf(events.find((e) => dealOf(e))!)!;
      assert.ok("redeals" in deal && deal.redeals === 1);
      deal.redeals = redeals;
      const check = await checkDeal(events, { seat: 0 });
      const failure = check.failed.find((f) => f.part === "redeal");
      assert.ok(failure, `${redeals} redeals: ${check.text}`);
      assert.match(
        failure.text,
        redeals === 0
          ? /the seeds' field shows four of a month, and it was not dealt again/
          : /dealt again though the seeds' deal needed no redeal/,
      );
    }
  });

  test("another commitment than the one shown fails, even before the game is over", async () => {
    for (const vector of GOLDEN.games) {
      for (const over of [true, false]) {
        const events = eventsOf(vector, "seat 1").slice(0, over ? undefined : -1);
        const shown = { ...shownAsPlayed(events, 1), commitment: "ab".repeat(32) };
        const check = await checkDeal(events, shown);
        assert.equal(check.status, "failed");
        assert.deepEqual(
          check.failed.map((f) => [f.part, f.version]),
          [["commitment", 1n]],
        );
        assert.match(check.text, /not the one you were shown before it was created/);
      }
    }
  });

  test("a revealed seed that is not the committed one fails", async () => {
    const events = eventsOf(GOLDEN.games[0]!, "seat 0");
    const last = events.at(-1)!.body!.body;
    assert.equal(last.case, "seedRevealed");
    last.value.serverSeed = "01" + last.value.serverSeed.slice(2);
    const check = await checkDeal(events, { seat: 0 });
    assert.deepEqual(
      check.failed.map((f) => f.part),
      ["seed"],
    );
    assert.match(check.text, /the revealed seed is not the one sealed at the start/);
  });

  test("client seeds other than the ones expected fail", async () => {
    const vector = GOLDEN.games[0]!;
    const events = eventsOf(vector, "seat 0");
    const [seed] = gameStartOf(events[0]!)!.clientSeeds;
    assert.ok(seed);
    const cases: [readonly string[], RegExp][] = [
      [["another seed"], /your own seed is not among the game's client seeds/],
      [[seed.toUpperCase()], /your own seed is not among the game's client seeds/],
      [[seed, "a friend's"], /the players' seeds "a friend's" are not among/],
    ];
    for (const [clientSeeds, why] of cases) {
      const check = await checkDeal(events, { ...shownAsPlayed(events, 0), clientSeeds });
      assert.deepEqual(
        check.failed.map((f) => f.part),
        ["client-seeds"],
      );
      assert.match(check.text, why);
    }
    // A seed beside the player's, or the players' in another order, fails too (the deal derived
    // from them may well be the one dealt: whoever added or ordered them chose it).
    const more = eventsOf(vector, "seat 0");
    const started = more[0]!.body!.body;
    assert.ok(started.case === "gin" && started.value.event.case === "matchStarted");
    started.value.event.value.clientSeeds = [seed, "the house's"];
    const extra = await checkDeal(more, { seat: 0, clientSeeds: [seed] });
    assert.equal(extra.failed[0]?.part, "client-seeds");
    assert.match(extra.text, /a client seed besides yours, chosen after yours/);
    const order = await checkDeal(more, { seat: 0, clientSeeds: ["the house's", seed] });
    assert.match(order.failed[0]?.text ?? "", /in another order than the one fixed before/);
  });

  test("a game not over yet cannot be checked yet, and claims nothing of its deal", async () => {
    for (const vector of GOLDEN.games) {
      const events = eventsOf(vector, "seat 0").slice(0, -1);
      const check = await checkDeal(events, shownAsPlayed(events, 0));
      assert.equal(check.status, "not-yet", vector.name);
      assert.equal(check.ok, false);
      assert.deepEqual(check.failed, []);
      assert.match(
        check.text,
        /cannot be checked yet: the server reveals its seed when the game is over/,
      );
      assert.ok(!check.passed.some((line) => line.part === "deals" || line.part === "seed"));
      assert.ok(check.unchecked.some((line) => line.part === "deals"));
    }
  });

  test("a copy without the game's first event, or without a deal, cannot be checked", async () => {
    const events = eventsOf(GOLDEN.games[0]!, "seat 0");
    const headless = await checkDeal(events.slice(1), { seat: 0 });
    assert.equal(headless.status, "cannot-check");
    assert.match(headless.text, /lacks its first event/);
    const dealless = await checkDeal(
      events.filter((e) => !dealOf(e)),
      { seat: 0 },
    );
    assert.equal(dealless.status, "cannot-check");
    assert.match(dealless.text, /shows no deal/);
  });

  test("a game other than the one shown fails: its kind, seats, the seat or its rules", async () => {
    for (const vector of GOLDEN.games) {
      const events = eventsOf(vector, "seat 1");
      const shown = shownAsPlayed(events, 1);
      const game = shown.game!;
      const otherKind = vector.kind === "gin" ? GameKind.KOIKOI : GameKind.GIN;
      const otherRules =
        vector.kind === "hoola"
          ? create(RulesSchema, { game: { case: "hoola", value: { jokers: 1 } } })
          : create(RulesSchema, { game: { case: "gin", value: { knockCard: 11 } } });
      const cases: [DealCheckOptions, RegExp][] = [
        [{ ...shown, game: { kind: otherKind } }, /the game is .*, not the .* you were shown/],
        [{ ...shown, game: { ...game, seats: vector.seats + 1 } }, /the game seats \d, not the \d/],
        [{ ...shown, game: { ...game, seat: 0 } }, /seats you at seat 1, not at seat 0 you were/],
        [
          { ...shown, game: { rules: otherRules } },
          vector.kind === "hoola" || vector.kind === "gin"
            ? /rules are not the ones you were shown: (jokers is \d, not 1|knock_card is \d+, not 11)/
            : /the game is .*, not the Gin Rummy you were shown/,
        ],
      ];
      for (const [options, why] of cases) {
        const check = await checkDeal(events, options);
        assert.deepEqual(
          check.failed.map((f) => [f.part, f.version]),
          [["game", 1n]],
          `${vector.name}: ${check.text}`,
        );
        assert.match(check.text, why, vector.name);
      }
    }
  });

  test("an option the first event leaves out is read as the engine's default for it", async () => {
    for (const [kind, options] of Object.entries(GOLDEN.added_later) as [
      KindName,
      Readonly<Record<string, number | boolean>>,
    ][]) {
      const schema = RULES[kind];
      const vector = GOLDEN.games.find((g) => g.kind === kind)!;
      for (const [option, recorded] of Object.entries(options)) {
        const field = schema.fields.find((f) => f.name === option);
        assert.ok(field, `${kind}'s rules have ${option}`);
        // The game as its first event would record it at the default: the option left out.
        const copy = structuredClone(vector.copies["seat 0"]!).slice(0, -1);
        const first = copy[0] as unknown as FirstEventJson;
        delete first.body[kind]![startName(kind)]!.rules[field.jsonName];
        const events = copy.map((e) => fromJson(GameEventSchema, e));
        for (const [value, holds] of [
          [recorded, true],
          [typeof recorded === "boolean" ? !recorded : recorded + 1, false],
        ] as const) {
          const shown = fromJson(RulesSchema, { [kind]: { [field.jsonName]: value } });
          const check = await checkDeal(events, { seat: 0, game: { rules: shown } });
          assert.equal(check.status, holds ? "not-yet" : "failed", `${kind} ${option} ${value}`);
          if (!holds) assert.ok(check.text.includes(`${option} is ${recorded}, not ${value}`));
        }
      }
    }
  });
});

test("the shuffle purposes are named, and the N-th counts from 1", () => {
  assert.deepEqual(
    [DEAL, FIRST_DEALER, SIT_OUT, reshufflePurpose(2), redealPurpose(1)],
    ["deal", "first-dealer", "sit-out", "reshuffle-2", "redeal-1"],
  );
  for (const n of [0, -1, 1.5, Number.NaN]) {
    assert.throws(() => reshufflePurpose(n), RangeError);
    assert.throws(() => redealPurpose(n), RangeError);
  }
});
