// A player's own check of the deal (docs/shuffle.md), from what their client has: the events its
// seat received, in order, the seat, and what the player was shown before the game existed (the
// commitment, the game, and the seed they chose). The game's first event carries the commitment
// and the client seeds; each deal event carries the seat's own hand as dealt (every hand, in a
// copy read once the game is over) and what every seat sees (the up-card, Koi-Koi's field, the
// cards turned for the first dealer); the game's last event reveals the server seed. Once it is
// revealed, the seed must hash to the commitment and every deal shown must be the one the seeds
// derive, card by card, laid out as each game deals (docs/shuffle.md, each game's deal). Nothing
// here needs another seat's hidden cards or the stock: a seat's own copy is enough.
//
// The texts are for the player (a page shows them as they are): each says what held or what did
// not, where; the parts and the events' versions and rounds say it to code.
import { create, equals, toJson, type DescMessage, type MessageShape } from "@bufbuild/protobuf";
import { reflect, scalarZeroValue } from "@bufbuild/protobuf/reflect";
import { GameKind } from "./gen/croupier/v1/common_pb.js";
import { GinRulesSchema } from "./gen/croupier/v1/gin_pb.js";
import { HoolaRulesSchema } from "./gen/croupier/v1/hoola_pb.js";
import { KoiKoiRulesSchema } from "./gen/croupier/v1/koikoi_pb.js";
import { RummyRulesSchema } from "./gen/croupier/v1/rummy_pb.js";
import { RulesSchema, type GameEvent, type Rules } from "./gen/croupier/v1/service_pb.js";
import {
  DEAL,
  FIRST_DEALER,
  hanafudaDeck,
  RANKS,
  redealPurpose,
  rummyDeck,
  seedMatchesCommitment,
  shuffleCards,
  standardDeck,
  type ShuffleCrypto,
  type ShuffleSeeds,
} from "./shuffle.js";

/** The deal layouts of docs/shuffle.md: each game's hand. */
const HOOLA_HAND = 7;
const GIN_HAND = 10;
const RUMMY_HAND = 13;
const KOIKOI_HAND = 8;
/** Koi-Koi: the dealer's hand, the other seat's, then the field, each KOIKOI_HAND cards. */
const KOIKOI_FIELD_AT = 2 * KOIKOI_HAND;
/** Koi-Koi: a field showing this many cards of one month is dealt again (docs/shuffle.md). */
const KOIKOI_MONTH_CARDS = 4;
/** Rummy deals one round: its shuffle's round number. */
const RUMMY_ROUND = 1;
/** The first dealer is drawn before round 1 (Gin's hand 1), from the `first-dealer` shuffle. */
const FIRST_ROUND = 1;
/** How much of a digest a sentence shows: enough to compare at a glance. */
const SHORT_HEX = 8;

/** The four games by their name in the contract's oneofs (EventBody, Rules). */
type KindName = "hoola" | "koikoi" | "gin" | "rummy";
const KINDS: Readonly<Record<KindName, { readonly kind: GameKind; readonly title: string }>> = {
  hoola: { kind: GameKind.HOOLA, title: "Hoola" },
  koikoi: { kind: GameKind.KOIKOI, title: "Koi-Koi" },
  gin: { kind: GameKind.GIN, title: "Gin Rummy" },
  rummy: { kind: GameKind.RUMMY, title: "Rummy" },
};

/**
 * What a game's first event means by leaving out an option added after games were recorded,
 * where that is not protobuf's zero: such an option is written only when it is not its default
 * (docs/replay-format.md: games recorded before it read it as its default too). The file
 * tests/golden/deal_vectors.json (`added_later`) lists every such option with its default, from
 * the engine; test/dealcheck.test.ts holds this to it.
 */
const RECORDED_DEFAULTS: Readonly<Record<string, number | boolean>> = {
  max_timeouts: 3,
  viewing_yaku: true,
};

/** "66687aad…5f2925": a digest shortened for the eye. */
export function shortHex(hex: string): string {
  return hex.length > 2 * SHORT_HEX ? `${hex.slice(0, SHORT_HEX)}…${hex.slice(-SHORT_HEX)}` : hex;
}

/** What a game's first event says (Hoola's `GameStarted`, Koi-Koi's `MatchStarted`, Gin's
 * `GinMatchStarted`, Rummy's `RummyStarted`). */
export interface GameStart {
  /** The event's version (1). */
  readonly version: bigint;
  readonly kind: GameKind;
  readonly seats: number;
  /** hex(sha256(server seed)). */
  readonly commitment: string;
  /** In the order the shuffle takes them. */
  readonly clientSeeds: readonly string[];
  /** The game's rules as recorded: every option but those added later at their default. */
  readonly rules: Rules;
}

/** The game's start if `event` is a game's first event, else undefined. */
export function gameStartOf(event: GameEvent): GameStart | undefined {
  const body = event.body?.body;
  switch (body?.case) {
    case "hoola": {
      const e = body.value.event;
      if (e.case !== "gameStarted") return undefined;
      return started(event, e.value, {
        case: "hoola",
        value: e.value.rules ?? create(HoolaRulesSchema),
      });
    }
    case "koikoi": {
      const e = body.value.event;
      if (e.case !== "matchStarted") return undefined;
      return started(event, e.value, {
        case: "koikoi",
        value: e.value.rules ?? create(KoiKoiRulesSchema),
      });
    }
    case "gin": {
      const e = body.value.event;
      if (e.case !== "matchStarted") return undefined;
      return started(event, e.value, {
        case: "gin",
        value: e.value.rules ?? create(GinRulesSchema),
      });
    }
    case "rummy": {
      const e = body.value.event;
      if (e.case !== "gameStarted") return undefined;
      return started(event, e.value, {
        case: "rummy",
        value: e.value.rules ?? create(RummyRulesSchema),
      });
    }
  }
  return undefined;
}

function started(
  event: GameEvent,
  first: {
    readonly seats: number;
    readonly commitment: string;
    readonly clientSeeds: readonly string[];
  },
  game: Rules["game"] & { case: KindName },
): GameStart {
  return {
    version: event.version,
    kind: KINDS[game.case].kind,
    seats: first.seats ?? 0,
    commitment: first.commitment ?? "",
    clientSeeds: [...(first.clientSeeds ?? [])],
    // A message of its own, made from the event's rules (which a test may write as a plain object).
    rules: create(RulesSchema, { game }),
  };
}

/** The name of a game kind in the contract's oneofs; undefined for none of the four. */
function kindName(kind: GameKind): KindName | undefined {
  return (Object.keys(KINDS) as KindName[]).find((name) => KINDS[name].kind === kind);
}

/** The game the player was shown with the commitment, before choosing their seed
 * (docs/shuffle.md, "Everything else the deal depends on"): each part given must be the game's. */
export interface ShownGame {
  readonly kind?: GameKind;
  readonly seats?: number;
  /** The seat the player was to take, held to the check's `seat` (the seat their token is for). */
  readonly seat?: number;
  /** The rules shown: a preset's as ListPresets gives them, with any overrides set on them, or
   * only the options that were shown. Each option set here must be the game's. */
  readonly rules?: Rules;
}

export interface DealCheckOptions {
  /** The seat whose copy the events are: the seat its token is for, as the server's views say
   * it (`view.seat`); undefined for a spectator's copy, which holds no hand of its own. */
  readonly seat: number | undefined;
  /** The commitment the player was shown before the game was created (`CommitSeed`'s, the
   * create reply's). Without it the seed is held to the game's own first event only. */
  readonly commitment?: string;
  /** The client seeds the game must have, exactly and in this order: the player's own seed, or
   * the players' in the order fixed before they chose. A seed besides them was chosen by whoever
   * saw them, who could try seed after seed until the deck suited. */
  readonly clientSeeds?: readonly string[];
  /** The game the player was shown with the commitment. */
  readonly game?: ShownGame;
  /** WebCrypto: the page's or Node.js's global one by default (throws where there is none). */
  readonly subtle?: ShuffleCrypto;
}

/** What each line of a check is about. */
export type DealCheckPart =
  /** The commitment against the one shown before the game. */
  | "commitment"
  /** The game's client seeds against the ones given. */
  | "client-seeds"
  /** The game (kind, seats, the seat, rules) against the one shown. */
  | "game"
  /** The revealed seed against the game's commitment. */
  | "seed"
  /** Every deal derived again (a passed line). */
  | "deals"
  | "hand"
  | "upcard"
  | "field"
  /** A Koi-Koi round dealt again: owed, and as often as owed. */
  | "redeal"
  /** The first dealer: the cards turned and the dealer they make, or the deck's last card. */
  | "first-dealer"
  /** What a seat's copy cannot show: cards drawn in play, rebuilt stocks, later dealers. */
  | "play";

export interface DealCheckLine {
  readonly part: DealCheckPart;
  /** A sentence for the player. */
  readonly text: string;
}

export interface DealFailure extends DealCheckLine {
  /** The event it was found in (its version): the first event, or the deal's. */
  readonly version?: bigint;
  /** The deal's round (Gin: its hand). */
  readonly round?: number;
  /** The seat whose hand it is. */
  readonly seat?: number;
  /** The cards the event shows there that the seeds do not deal there… */
  readonly shown?: readonly string[];
  /** …and the cards the seeds deal there that it does not show. */
  readonly derived?: readonly string[];
}

/** "passed": every part checked held; "failed": one did not (`failed` says which, and where);
 * "not-yet": nothing failed so far, but the seed is revealed only at the game's end, and the
 * deal cannot be checked before; "cannot-check": the events lack the game's first event, or
 * show no deal. */
export type DealCheckStatus = "passed" | "failed" | "not-yet" | "cannot-check";

export interface DealCheck {
  readonly status: DealCheckStatus;
  /** `status === "passed"`. */
  readonly ok: boolean;
  /** The verdict in a sentence, for the player. */
  readonly text: string;
  readonly passed: readonly DealCheckLine[];
  readonly failed: readonly DealFailure[];
  /** What this check could not look at, and why. */
  readonly unchecked: readonly DealCheckLine[];
}

/** One deal as the copy shows it. */
interface DealSeen {
  readonly version: bigint;
  readonly round: number;
  readonly dealer: number;
  /** The hands shown (a seat's own in its copy during play; every one once the game is over). */
  readonly hands: readonly { readonly seat: number; readonly cards: readonly string[] }[];
  readonly upcard: string | undefined;
  readonly field: readonly string[];
  readonly redeals: number;
  /** The first dealer's draw, in the order turned (the first deal only). */
  readonly draws: readonly { readonly seat: number; readonly card: string }[];
}

interface CardLike {
  readonly code: string;
}
interface DealFields {
  readonly dealer: number;
  readonly hands: readonly { readonly seat: number; readonly cards: readonly CardLike[] }[];
  readonly dealerDraws: readonly { readonly seat: number; readonly card?: CardLike }[];
}

const codes = (cards: readonly (CardLike | undefined)[] | undefined): string[] =>
  (cards ?? []).map((c) => c?.code ?? "").filter(Boolean);

function seen(
  version: bigint,
  round: number,
  dealt: DealFields,
  upcard: CardLike | undefined,
  field: readonly CardLike[] = [],
  redeals = 0,
): DealSeen {
  return {
    version,
    round,
    dealer: dealt.dealer ?? 0,
    hands: (dealt.hands ?? []).map((h) => ({ seat: h.seat ?? 0, cards: codes(h.cards) })),
    upcard: upcard?.code || undefined,
    field: codes(field),
    redeals,
    draws: (dealt.dealerDraws ?? []).map((d) => ({ seat: d.seat ?? 0, card: d.card?.code ?? "" })),
  };
}

/** The deal `event` records, if it is a deal. */
function dealOf(event: GameEvent): DealSeen | undefined {
  const body = event.body?.body;
  const version = event.version;
  switch (body?.case) {
    case "hoola": {
      const e = body.value.event;
      return e.case === "roundDealt"
        ? seen(version, e.value.round, e.value, e.value.upcard)
        : undefined;
    }
    case "koikoi": {
      const e = body.value.event;
      if (e.case !== "roundDealt") return undefined;
      return seen(version, e.value.round, e.value, undefined, e.value.field, e.value.redeals ?? 0);
    }
    case "gin": {
      const e = body.value.event;
      return e.case === "handDealt"
        ? seen(version, e.value.hand, e.value, e.value.upcard)
        : undefined;
    }
    case "rummy": {
      const e = body.value.event;
      return e.case === "roundDealt"
        ? seen(version, RUMMY_ROUND, e.value, e.value.upcard)
        : undefined;
    }
  }
  return undefined;
}

/** Where each card of a shuffled deck goes (docs/shuffle.md, each game's deal): every seat's
 * hand, the up-card, Koi-Koi's field. */
interface Dealt {
  readonly hands: ReadonlyMap<number, readonly string[]>;
  readonly upcard: string | undefined;
  readonly field: readonly string[];
}

function layout(kind: KindName, deck: readonly string[], seats: number, dealer: number): Dealt {
  const slice = (from: number, size: number) => deck.slice(from, from + size);
  const hands = new Map<number, readonly string[]>();
  for (let seat = 0; seat < seats; seat++) {
    switch (kind) {
      case "hoola": // seat dealer + k gets cards 7k … 7k + 6
        hands.set(seat, slice(((seat - dealer + seats) % seats) * HOOLA_HAND, HOOLA_HAND));
        break;
      case "rummy": // seat dealer + 1 + k gets cards 13k … 13k + 12
        hands.set(seat, slice(((seat - dealer - 1 + 2 * seats) % seats) * RUMMY_HAND, RUMMY_HAND));
        break;
      case "gin": // the non-dealer 0 … 9, the dealer 10 … 19
        hands.set(seat, slice(seat === dealer ? GIN_HAND : 0, GIN_HAND));
        break;
      case "koikoi": // the dealer 0 … 7, the other seat 8 … 15
        hands.set(seat, slice(seat === dealer ? 0 : KOIKOI_HAND, KOIKOI_HAND));
        break;
    }
  }
  switch (kind) {
    case "hoola":
      return { hands, upcard: deck[seats * HOOLA_HAND], field: [] };
    case "rummy":
      return { hands, upcard: deck[seats * RUMMY_HAND], field: [] };
    case "gin":
      return { hands, upcard: deck[2 * GIN_HAND], field: [] };
    case "koikoi":
      return { hands, upcard: undefined, field: slice(KOIKOI_FIELD_AT, KOIKOI_HAND) };
  }
}

function deckOf(kind: KindName, jokers: number): string[] {
  if (kind === "koikoi") return hanafudaDeck();
  if (kind === "rummy") return rummyDeck();
  return standardDeck(kind === "hoola" ? jokers : 0);
}

/** A standard card's rank (ace 1 … king 13; a Rummy copy's code too), a joker's 0. */
function rank(code: string): number {
  return code.startsWith("JK") ? 0 : RANKS.indexOf(code[0] as (typeof RANKS)[number]) + 1;
}

/** A card's order in the first dealer's draw: a standard card's rank, a Hanafuda card's month
 * (the digits its code starts with). */
function drawOrder(kind: KindName, code: string): number {
  return kind === "koikoi" ? parseInt(code, 10) : rank(code);
}

/** The first dealer the `first-dealer` shuffle draws (docs/shuffle.md): the seats turn a card
 * each, in seat order from seat 0; the lowest deals; the seats tied at the lowest alone turn
 * again. The cards turned, by whom, in order, and the seat that deals (undefined: the deck ran
 * out on ties). */
function drawnDealer(
  kind: KindName,
  turned: readonly string[],
  seats: number,
): { draws: { seat: number; card: string }[]; dealer: number | undefined } {
  const draws: { seat: number; card: string }[] = [];
  let contenders = Array.from({ length: seats }, (_, s) => s);
  let at = 0;
  while (contenders.length > 1 && at + contenders.length <= turned.length) {
    const cards = turned.slice(at, at + contenders.length);
    at += contenders.length;
    contenders.forEach((seat, i) => draws.push({ seat, card: cards[i] ?? "" }));
    const orders = cards.map((c) => drawOrder(kind, c));
    const lowest = Math.min(...orders);
    contenders = contenders.filter((_, i) => orders[i] === lowest);
  }
  return { draws, dealer: contenders.length === 1 ? contenders[0] : undefined };
}

/** Whether a Koi-Koi field shows all four cards of a month: such a deal is dealt again. */
function fourOfAMonth(field: readonly string[]): boolean {
  const counts = new Map<number, number>();
  for (const code of field) {
    const month = parseInt(code, 10);
    counts.set(month, (counts.get(month) ?? 0) + 1);
  }
  return [...counts.values()].some((n) => n >= KOIKOI_MONTH_CARDS);
}

/** The cards of `cards` that `others` lacks, each as often as it lacks it. */
function lacking(cards: readonly string[], others: readonly string[]): string[] {
  const left = [...others];
  return cards.filter((card) => {
    const at = left.indexOf(card);
    if (at < 0) return true;
    left.splice(at, 1);
    return false;
  });
}

/** "round 2", "hand 2". */
function dealName(kind: KindName, round: number): string {
  return `${kind === "gin" ? "hand" : "round"} ${round}`;
}

/** What differs between two hands, in words: "8C in place of 3H". */
function cardsWord(shown: readonly string[], derived: readonly string[]): string {
  if (shown.length && derived.length) return `${shown.join(" ")} in place of ${derived.join(" ")}`;
  if (shown.length) return `${shown.join(" ")} besides`;
  return `${derived.join(" ")} missing`;
}

/** The options set in `shown` whose value the game recorded otherwise, in words. */
function optionsDiffering<Desc extends DescMessage>(
  schema: Desc,
  shown: MessageShape<Desc>,
  recorded: MessageShape<Desc>,
): string[] {
  const want = reflect(schema, shown);
  const got = reflect(schema, recorded);
  const differing: string[] = [];
  for (const field of want.fields) {
    if (!want.isSet(field)) continue;
    switch (field.fieldKind) {
      case "scalar":
      case "enum": {
        const zero = field.fieldKind === "scalar" ? scalarZeroValue(field.scalar, false) : 0;
        const wanted = want.get(field);
        const value = got.isSet(field) ? got.get(field) : (RECORDED_DEFAULTS[field.name] ?? zero);
        const word = (v: unknown) =>
          field.fieldKind === "enum"
            ? (field.enum.values.find((e) => e.number === v)?.name ?? String(v))
            : String(v);
        if (wanted !== value)
          differing.push(`${field.name} is ${word(value)}, not ${word(wanted)}`);
        break;
      }
      case "message": {
        const wanted = want.get(field).message;
        const value = got.isSet(field) ? got.get(field).message : undefined;
        if (!value || !equals(field.message, wanted, value)) {
          const word = (m: typeof wanted | undefined) =>
            m ? JSON.stringify(toJson(field.message, m)) : "unset";
          differing.push(`${field.name} is ${word(value)}, not ${word(wanted)}`);
        }
        break;
      }
      default: // no rule set holds a list or a map
        break;
    }
  }
  return differing;
}

/** The options of `shown` the game's rules do not have, in words (another kind's: none here,
 * the kind says it). */
function rulesDiffering(shown: Rules, recorded: Rules): string[] {
  const [a, b] = [shown.game, recorded.game];
  if (a.case === "hoola" && b.case === "hoola")
    return optionsDiffering(HoolaRulesSchema, a.value, b.value);
  if (a.case === "koikoi" && b.case === "koikoi")
    return optionsDiffering(KoiKoiRulesSchema, a.value, b.value);
  if (a.case === "gin" && b.case === "gin")
    return optionsDiffering(GinRulesSchema, a.value, b.value);
  if (a.case === "rummy" && b.case === "rummy")
    return optionsDiffering(RummyRulesSchema, a.value, b.value);
  return [];
}

const titleOf = (kind: GameKind): string =>
  Object.values(KINDS).find((k) => k.kind === kind)?.title ?? `game kind ${kind}`;

/** The game held to what was shown: its kind, its seats, the player's seat, its rules. */
function gameFailures(start: GameStart, shown: ShownGame, seat: number | undefined): DealFailure[] {
  const failures: DealFailure[] = [];
  const at = { part: "game", version: start.version } as const;
  const rulesKind = shown.rules?.game.case;
  const shownKinds = [shown.kind, rulesKind ? KINDS[rulesKind].kind : undefined];
  const otherKind = shownKinds.find((kind) => kind !== undefined && kind !== start.kind);
  if (otherKind !== undefined)
    failures.push({
      ...at,
      text: `the game is ${titleOf(start.kind)}, not the ${titleOf(otherKind)} you were shown.`,
    });
  if (shown.seats !== undefined && shown.seats !== start.seats)
    failures.push({
      ...at,
      text: `the game seats ${start.seats}, not the ${shown.seats} you were shown.`,
    });
  if (shown.seat !== undefined && shown.seat !== seat)
    failures.push({
      ...at,
      text:
        seat === undefined
          ? `this copy of the game is a spectator's, not seat ${shown.seat}'s you were shown.`
          : `the game seats you at seat ${seat}, not at seat ${shown.seat} you were shown.`,
    });
  const differing = shown.rules ? rulesDiffering(shown.rules, start.rules) : [];
  if (differing.length)
    failures.push({
      ...at,
      text: `the game's rules are not the ones you were shown: ${differing.join("; ")}.`,
    });
  return failures;
}

/** What of the game shown was compared, in words ("Gin Rummy, 2 seats, you at seat 0, its rules
 * as shown"); empty when nothing was given. */
function gameCompared(start: GameStart, shown: ShownGame, seat: number | undefined): string {
  return [
    shown.kind !== undefined || shown.rules?.game.case ? titleOf(start.kind) : "",
    shown.seats !== undefined ? `${start.seats} seats` : "",
    shown.seat !== undefined ? `you at seat ${seat}` : "",
    shown.rules ? "its rules as shown" : "",
  ]
    .filter(Boolean)
    .join(", ");
}

/** The game's client seeds held to the ones given: the player's alone, or the players'. */
function seedFailures(start: GameStart, given: readonly string[]): DealFailure[] {
  const at = { part: "client-seeds", version: start.version } as const;
  const game = start.clientSeeds;
  const missing = lacking(given, game);
  const extra = lacking(game, given);
  const [mine] = given;
  if (given.length === 1 && mine !== undefined) {
    if (!game.includes(mine))
      return [{ ...at, text: "your own seed is not among the game's client seeds." }];
    if (game.length !== 1)
      return [
        {
          ...at,
          text: "the game has a client seed besides yours, chosen after yours: whoever chose it could have picked the deck.",
        },
      ];
    return [];
  }
  if (missing.length)
    return [
      {
        ...at,
        text: `the players' seeds ${missing.map((s) => JSON.stringify(s)).join(", ")} are not among the game's client seeds.`,
      },
    ];
  if (extra.length)
    return [
      {
        ...at,
        text: "the game has a client seed besides the players', chosen after theirs: whoever chose it could have picked the deck.",
      },
    ];
  if (game.join("\u0000") !== given.join("\u0000"))
    return [
      {
        ...at,
        text: "the game takes the players' seeds in another order than the one fixed before they chose: whoever ordered them could have picked the deck.",
      },
    ];
  return [];
}

/** The client seeds held, in words, for `count` seeds given. */
function seedsHeld(count: number): string {
  if (count === 0) return "The game has no client seed, as expected.";
  if (count === 1) return "Your seed is the game's only client seed.";
  return "The game's client seeds are the players', in the order fixed before they chose.";
}

/** Every deal the copy shows against the deal the seeds derive, each difference pushed onto
 * `failures`; how many hands it compared, and how many of them were `seat`'s own. */
async function dealFailures(
  kind: KindName,
  start: GameStart,
  deals: readonly DealSeen[],
  seeds: ShuffleSeeds,
  seat: number | undefined,
  subtle: ShuffleCrypto | undefined,
  failures: DealFailure[],
): Promise<{ ownHands: number; hands: number }> {
  const rules = start.rules.game;
  const jokers = rules.case === "hoola" ? (rules.value.jokers ?? 0) : 0;
  // Gin and Koi-Koi always draw; Hoola and Rummy since `first_dealer_drawn` (every preset),
  // before it the rank of the deck's last card, counted round the seats, made the dealer.
  const drawn =
    kind === "gin" ||
    kind === "koikoi" ||
    ((rules.case === "hoola" || rules.case === "rummy") && rules.value.firstDealerDrawn === true);
  let ownHands = 0;
  let hands = 0;
  let firstSeen = false;
  for (const deal of deals) {
    const name = dealName(kind, deal.round);
    const at = { version: deal.version, round: deal.round };
    const purpose = deal.redeals ? redealPurpose(deal.redeals) : DEAL;
    const deck = await shuffleCards(deckOf(kind, jokers), seeds, deal.round, purpose, subtle);
    const derived = layout(kind, deck, start.seats, deal.dealer);
    for (const hand of deal.hands) {
      if (!hand.cards.length) continue; // hidden in this copy
      const own = hand.seat === seat;
      const dealtThere = derived.hands.get(hand.seat) ?? [];
      const shownOnly = lacking(hand.cards, dealtThere);
      const derivedOnly = lacking(dealtThere, hand.cards);
      hands++;
      if (own) ownHands++;
      if (!shownOnly.length && !derivedOnly.length) continue;
      const whose = own
        ? "the hand you were dealt is not the one the seeds deal you"
        : `seat ${hand.seat}'s hand is not the one the seeds deal it`;
      failures.push({
        part: "hand",
        ...at,
        seat: hand.seat,
        shown: shownOnly,
        derived: derivedOnly,
        text: `${name}: ${whose} (${cardsWord(shownOnly, derivedOnly)}).`,
      });
    }
    if (deal.upcard && deal.upcard !== derived.upcard)
      failures.push({
        part: "upcard",
        ...at,
        shown: [deal.upcard],
        derived: derived.upcard ? [derived.upcard] : [],
        text: `${name}: the up-card is ${deal.upcard}, not the seeds' (${derived.upcard ?? "none"}).`,
      });
    if (deal.field.length) {
      const shownOnly = lacking(deal.field, derived.field);
      const derivedOnly = lacking(derived.field, deal.field);
      if (shownOnly.length || derivedOnly.length)
        failures.push({
          part: "field",
          ...at,
          shown: shownOnly,
          derived: derivedOnly,
          text: `${name}: the field is not the seeds' (${cardsWord(shownOnly, derivedOnly)}).`,
        });
    }
    if (kind === "koikoi") {
      // A redeal is owed only when the field showed four of a month, and owed again as long as
      // it does: each deck thrown in must have, and the one dealt must not, or the server could
      // have picked among several decks the one to deal.
      for (let n = 0; n < deal.redeals; n++) {
        const thrown = await shuffleCards(
          hanafudaDeck(),
          seeds,
          deal.round,
          n === 0 ? DEAL : redealPurpose(n),
          subtle,
        );
        if (!fourOfAMonth(thrown.slice(KOIKOI_FIELD_AT, KOIKOI_FIELD_AT + KOIKOI_HAND))) {
          failures.push({
            part: "redeal",
            ...at,
            text: `${name}: it was dealt again though the seeds' deal needed no redeal.`,
          });
          break;
        }
      }
      if (fourOfAMonth(derived.field))
        failures.push({
          part: "redeal",
          ...at,
          text: `${name}: the seeds' field shows four of a month, and it was not dealt again.`,
        });
    }
    if (firstSeen || deal.round !== FIRST_ROUND) continue;
    firstSeen = true;
    const failure = await firstDealerFailure(kind, start, deal, deck, drawn, seeds, subtle);
    if (failure) failures.push({ part: "first-dealer", ...at, text: `${name}: ${failure}` });
  }
  return { ownHands, hands };
}

/** The first deal's dealer against the one the seeds make; undefined when it is theirs. */
async function firstDealerFailure(
  kind: KindName,
  start: GameStart,
  deal: DealSeen,
  deck: readonly string[],
  drawn: boolean,
  seeds: ShuffleSeeds,
  subtle: ShuffleCrypto | undefined,
): Promise<string | undefined> {
  if (!drawn) {
    if (deal.draws.length)
      return "cards were turned for the first dealer, though the game's rules read the dealer off the deck's last card.";
    const last = deck[deck.length - 1] ?? "";
    return deal.dealer === rank(last) % start.seats
      ? undefined
      : "the dealer is not the one the seeds' deck makes (its last card's rank, counted round the seats).";
  }
  const turned = await shuffleCards(
    kind === "koikoi" ? hanafudaDeck() : standardDeck(),
    seeds,
    FIRST_ROUND,
    FIRST_DEALER,
    subtle,
  );
  // The draw decides who deals, and so which cards each seat gets: the dealer named must be the
  // one the turned cards make, not only the cards turned.
  const draw = drawnDealer(kind, turned, start.seats);
  const words = (draws: readonly { seat: number; card: string }[]) =>
    draws.map((d) => `${d.seat}:${d.card}`).join(" ");
  if (words(deal.draws) !== words(draw.draws))
    return "the cards turned for the first dealer are not the seeds'.";
  if (deal.dealer !== draw.dealer) return "the dealer is not the one the seeds' draw makes.";
  return undefined;
}

/** Said plainly, so that "passed" is not read as more than it is: a seat's copy holds the deals
 * only (the replay's verifiers check the rest: docs/shuffle.md). */
const PLAY_UNCHECKED: DealCheckLine = {
  part: "play",
  text: "Not checked here: the cards drawn from the stock during play, any rebuilt stock, and who deals after the first deal, which follows from play (the whole game is in its replay file, which the replay verifier, croupier replay verify, checks).",
};

/**
 * Checks the deal of a game from a client's own copy of its events (`events`, in the order
 * received: followGame's or playSeat's `event` messages, or GetReplay's, from the game's first
 * event), for every game kind (docs/shuffle.md):
 *
 * - what the player was shown before the game existed, when given: the commitment, the client
 *   seeds (exactly, in order) and the game (kind, seats, their seat, rules), against the game's
 *   first event: these can fail before the game is over;
 * - once the game is over, the revealed seed against the commitment, then every deal the copy
 *   shows against the deal the seeds derive: each hand shown (the seat's own, every seat's in a
 *   copy read after the end), the up-card or Koi-Koi's field, the first dealer's draw and the
 *   dealer it makes (or, in games recorded before `first_dealer_drawn`, the deck's last card),
 *   and that a Koi-Koi round was dealt again exactly as often as its field showed four of a month.
 *
 * Before the seed is revealed (the game not over) the status is "not-yet", unless something
 * shown already failed.
 */
export async function checkDeal(
  events: readonly GameEvent[],
  options: DealCheckOptions,
): Promise<DealCheck> {
  const { seat, subtle } = options;
  const passed: DealCheckLine[] = [];
  const failed: DealFailure[] = [];
  const unchecked: DealCheckLine[] = [];
  let start: GameStart | undefined;
  let serverSeed: string | undefined;
  let revealedAt: bigint | undefined;
  const deals: DealSeen[] = [];
  for (const event of events) {
    start ??= gameStartOf(event);
    const deal = dealOf(event);
    if (deal) deals.push(deal);
    const body = event.body?.body;
    if (body?.case === "seedRevealed") {
      serverSeed = body.value.serverSeed;
      revealedAt = event.version;
    }
  }
  const kind = start && kindName(start.kind);
  if (!start || !kind)
    return verdict(
      "cannot-check",
      "The deal cannot be checked: this copy of the game lacks its first event, which holds the commitment and the seeds.",
      passed,
      failed,
      unchecked,
    );

  // What the player was shown: each can be held to the first event at once.
  if (options.commitment === undefined)
    unchecked.push({
      part: "commitment",
      text: "Not checked: that the commitment is the one you were shown before the game was created (none was given to compare).",
    });
  else if (options.commitment.toLowerCase() !== start.commitment.toLowerCase())
    failed.push({
      part: "commitment",
      version: start.version,
      text: "the game's commitment is not the one you were shown before it was created.",
    });
  else
    passed.push({
      part: "commitment",
      text: "The game's commitment is the one you were shown before it was created.",
    });
  if (options.clientSeeds === undefined)
    unchecked.push({
      part: "client-seeds",
      text: "Not checked: that the game's client seeds are yours alone (none were given to compare).",
    });
  else {
    const wrong = seedFailures(start, options.clientSeeds);
    failed.push(...wrong);
    if (!wrong.length)
      passed.push({
        part: "client-seeds",
        text: seedsHeld(options.clientSeeds.length),
      });
  }
  const compared = options.game && gameCompared(start, options.game, seat);
  if (!options.game || !compared)
    unchecked.push({
      part: "game",
      text: "Not checked: that the game (its kind, seats, rules and your seat) is the one you were shown (none was given to compare).",
    });
  else {
    const wrong = gameFailures(start, options.game, seat);
    failed.push(...wrong);
    if (!wrong.length)
      passed.push({ part: "game", text: `The game is the one you were shown: ${compared}.` });
  }

  if (serverSeed === undefined) {
    unchecked.push({
      part: "deals",
      text: "Not checked yet: the deal, which the seed revealed at the game's end derives.",
    });
    return failed.length
      ? verdict("failed", "", passed, failed, unchecked)
      : verdict(
          "not-yet",
          "The deal cannot be checked yet: the server reveals its seed when the game is over.",
          passed,
          failed,
          unchecked,
        );
  }
  if (!(await seedMatchesCommitment(serverSeed, start.commitment, subtle))) {
    failed.push({
      part: "seed",
      version: revealedAt,
      text: "the revealed seed is not the one sealed at the start (its sha256 is not the commitment).",
    });
    return verdict("failed", "", passed, failed, unchecked);
  }
  passed.push({
    part: "seed",
    text: `The revealed seed's sha256 is the commitment shown from the start (${shortHex(start.commitment)}).`,
  });
  if (!deals.length)
    return verdict(
      "cannot-check",
      "The deal cannot be checked: this copy of the game shows no deal.",
      passed,
      failed,
      unchecked,
    );
  const seeds = { serverSeed, clientSeeds: start.clientSeeds };
  const { ownHands, hands } = await dealFailures(kind, start, deals, seeds, seat, subtle, failed);
  if (failed.length) return verdict("failed", "", passed, failed, [...unchecked, PLAY_UNCHECKED]);
  const dealt = deals.length;
  passed.push({
    part: "deals",
    text:
      `${dealt} ${dealt === 1 ? "deal" : "deals"} derived again from the seed: ` +
      (ownHands ? "your hand, " : hands ? "every hand shown, " : "") +
      "the cards dealt face up, the first dealer's draw and the dealer it makes match.",
  });
  const own = options.clientSeeds;
  const sealedFirst = options.commitment !== undefined;
  const ownSeed = !own?.length
    ? ""
    : own.length === 1
      ? sealedFirst
        ? " Your own seed, chosen after the server sealed its seed, was part of the shuffle."
        : " Your own seed was part of the shuffle."
      : sealedFirst
        ? " The players' own seeds, chosen after the server sealed its seed, were part of the shuffle."
        : " The players' own seeds were part of the shuffle.";
  const text =
    (ownHands > 0
      ? `Your dealt hand matches the deck from the sealed seed${ownHands > 1 ? ` (all ${ownHands} deals)` : ""}.`
      : hands > 0
        ? "Every hand shown and the cards dealt face up match the deck from the sealed seed."
        : "The cards dealt face up match the deck from the sealed seed.") + ownSeed;
  return verdict("passed", text, passed, failed, [...unchecked, PLAY_UNCHECKED]);
}

function verdict(
  status: DealCheckStatus,
  text: string,
  passed: readonly DealCheckLine[],
  failed: readonly DealFailure[],
  unchecked: readonly DealCheckLine[],
): DealCheck {
  const why = failed[0]?.text;
  return {
    status,
    ok: status === "passed",
    text: status === "failed" && why ? `The deal could not be confirmed: ${why}` : text,
    passed,
    failed,
    unchecked,
  };
}
