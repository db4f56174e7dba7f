// "Fair deal": what a seat can check of its game's shuffle itself (docs/shuffle.md). The game's
// first event carries the commitment (sha256 of the server's secret seed) and the client seeds;
// each deal event carries the seat's own hand as dealt, and what every seat sees (the up-card,
// Koi-Koi's field, the cards turned for the first dealer); the game's last event reveals the seed.
// Once it is revealed, the seed must hash to the commitment, and every deal the seat saw must be
// the one the seeds derive, card by card. Nothing here shows or needs another seat's hidden cards
// or the stock: only the seat's own copy of the events.
//
// Kept apart from the page (main.ts) and from where the commitment comes from, so that the
// commit-first flow (the lobby seals a seed before the game is created, and the player adds
// their own) only hands `expected` to checkDeal: see README, "In a browser".
import type { GameEvent } from "@croupier/client/web";
import {
  DEAL,
  FIRST_DEALER,
  hanafudaDeck,
  RANKS,
  rummyDeck,
  seedMatchesCommitment,
  shuffleCards,
  standardDeck,
  type ShuffleCrypto,
} from "@croupier/client/web";

/** The deal layouts of docs/shuffle.md. */
const HOOLA_HAND = 7;
const GIN_HAND = 10;
const RUMMY_HAND = 13;
const KOIKOI_HAND = 8;
/** Koi-Koi: the dealer's hand, the other seat's, then the field, each KOIKOI_HAND cards. */
const KOIKOI_FIELD_AT = 2 * KOIKOI_HAND;
/** Koi-Koi: a field showing this many cards of one month is dealt again (docs/shuffle.md). */
const KOIKOI_MONTH_CARDS = 4;
/** The purpose of a Koi-Koi round's N-th redeal is this and N (docs/shuffle.md). */
const REDEAL = "redeal-";
/** How much of a digest the page shows before "Show all": enough to compare at a glance. */
const SHORT_HEX = 8;

type Kind = "hoola" | "koikoi" | "gin" | "rummy";

interface Card {
  readonly code: string;
}

/** One deal as this seat saw it. */
export interface DealSeen {
  readonly round: number;
  readonly purpose: string;
  readonly dealer: number;
  /** The seat's own hand as dealt (undefined: a spectator's copy, or another seat's). */
  readonly hand: readonly string[] | undefined;
  readonly upcard: string | undefined;
  readonly field: readonly string[];
  /** The first dealer's draw, in the order turned (the first deal only). */
  readonly draws: readonly string[];
}

/** What a game's events tell of its shuffle, for one seat. */
export interface ShuffleRecord {
  kind: Kind | undefined;
  seats: number;
  jokers: number;
  commitment: string;
  clientSeeds: readonly string[];
  deals: DealSeen[];
  /** Revealed when the game ends (hex); empty until then. */
  serverSeed: string;
}

/** What the page can hold the game to besides its own events: the commitment it was shown before
 * the game was created and the seed it contributed (the commit-first flow), which must be the
 * game's only client seed (the lobby's games take one). */
export interface Expected {
  readonly commitment?: string;
  readonly clientSeed?: string;
}

export interface DealCheck {
  readonly ok: boolean;
  /** The verdict in a sentence, for the player. */
  readonly text: string;
  /** What was checked, or what did not match, one line each. */
  readonly details: readonly string[];
}

const codes = (cards: readonly (Card | undefined)[] | undefined): string[] =>
  (cards ?? []).map((c) => c?.code ?? "").filter(Boolean);
const sorted = (cards: readonly string[]): string => [...cards].sort().join(" ");

/** "66687aad…5f2925": a digest shortened for the eye (the whole one is a click away). */
export function shortHex(hex: string): string {
  return hex.length > 2 * SHORT_HEX ? `${hex.slice(0, SHORT_HEX)}…${hex.slice(-SHORT_HEX)}` : hex;
}

/** The fields the four games' events share (proto: GameStarted, RoundDealt, …). */
interface DealFields {
  readonly round?: number;
  readonly hand?: unknown;
  readonly dealer?: number;
  readonly hands?: readonly { readonly seat: number; readonly cards: readonly Card[] }[];
  readonly upcard?: Card;
  readonly field?: readonly Card[];
  readonly redeals?: number;
  readonly dealerDraws?: readonly { readonly card?: Card }[];
  readonly seats?: number;
  readonly commitment?: string;
  readonly clientSeeds?: readonly string[];
  readonly rules?: { readonly jokers?: number };
}

/** Collects, from a seat's events as they come, what the check needs. */
export class ShuffleWatcher {
  readonly record: ShuffleRecord = {
    kind: undefined,
    seats: 0,
    jokers: 0,
    commitment: "",
    clientSeeds: [],
    deals: [],
    serverSeed: "",
  };

  constructor(private readonly seat: number | undefined) {}

  add(event: GameEvent): void {
    const body = event.body?.body;
    if (!body?.case) return;
    if (body.case === "seedRevealed") {
      this.record.serverSeed = body.value.serverSeed;
      return;
    }
    const kind = body.case as Kind;
    const inner = (body.value as { event?: { case?: string; value?: unknown } }).event;
    const f = (inner?.value ?? {}) as DealFields;
    switch (inner?.case) {
      case "gameStarted":
      case "matchStarted":
        Object.assign(this.record, {
          kind,
          seats: f.seats ?? 0,
          jokers: f.rules?.jokers ?? 0,
          commitment: f.commitment ?? "",
          clientSeeds: [...(f.clientSeeds ?? [])],
        });
        return;
      case "roundDealt":
      case "handDealt": {
        const round = kind === "gin" ? Number(f.hand ?? 0) : kind === "rummy" ? 1 : (f.round ?? 0);
        const redeals = f.redeals ?? 0;
        const own = f.hands?.find((h) => h.seat === this.seat);
        this.record.deals.push({
          round,
          purpose: redeals ? `${REDEAL}${redeals}` : DEAL,
          dealer: f.dealer ?? 0,
          hand: own?.cards.length ? codes(own.cards) : undefined,
          upcard: f.upcard?.code || undefined,
          field: codes(f.field),
          draws: codes((f.dealerDraws ?? []).map((d) => d.card)),
        });
      }
    }
  }
}

/** The seat's hand, the up-card and the field as the deck deals them (docs/shuffle.md, each
 * game's deal). */
function layout(
  kind: Kind,
  deck: readonly string[],
  seats: number,
  dealer: number,
  seat: number | undefined,
): { hand: string[] | undefined; upcard: string | undefined; field: string[] } {
  const slice = (from: number, size: number) => deck.slice(from, from + size);
  const mine = seat !== undefined && seat >= 0 && seat < seats;
  switch (kind) {
    case "hoola":
      return {
        hand: mine ? slice(((seat - dealer + seats) % seats) * HOOLA_HAND, HOOLA_HAND) : undefined,
        upcard: deck[seats * HOOLA_HAND],
        field: [],
      };
    case "rummy":
      return {
        hand: mine
          ? slice(((seat - dealer - 1 + 2 * seats) % seats) * RUMMY_HAND, RUMMY_HAND)
          : undefined,
        upcard: deck[seats * RUMMY_HAND],
        field: [],
      };
    case "gin":
      return {
        hand: mine ? slice(seat === dealer ? GIN_HAND : 0, GIN_HAND) : undefined,
        upcard: deck[2 * GIN_HAND],
        field: [],
      };
    case "koikoi":
      return {
        hand: mine ? slice(seat === dealer ? 0 : KOIKOI_HAND, KOIKOI_HAND) : undefined,
        upcard: undefined,
        field: slice(KOIKOI_FIELD_AT, KOIKOI_HAND),
      };
  }
}

function deckOf(kind: Kind, jokers: number): string[] {
  if (kind === "koikoi") return hanafudaDeck();
  if (kind === "rummy") return rummyDeck();
  return standardDeck(kind === "hoola" ? jokers : 0);
}

/** A card's order in the first dealer's draw: a standard card's rank (ace 1 … king 13), a Hanafuda
 * card's month (the digits its code starts with). */
function drawOrder(kind: Kind, code: string): number {
  return kind === "koikoi"
    ? parseInt(code, 10)
    : RANKS.indexOf(code[0] as (typeof RANKS)[number]) + 1;
}

/** The first dealer the `first-dealer` shuffle draws (docs/shuffle.md): the seats turn a card each,
 * in seat order; the lowest deals; the seats tied at the lowest alone turn again. The cards
 * turned, in order, and the seat that deals (undefined: the deck ran out on ties). */
function drawnDealer(
  kind: Kind,
  turned: readonly string[],
  seats: number,
): { draws: string[]; dealer: number | undefined } {
  const draws: string[] = [];
  let contenders = Array.from({ length: seats }, (_, s) => s);
  let at = 0;
  while (contenders.length > 1 && at + contenders.length <= turned.length) {
    const cards = turned.slice(at, at + contenders.length);
    at += contenders.length;
    draws.push(...cards);
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

/** "round 2", "hand 2". */
function dealName(kind: Kind, round: number): string {
  return `${kind === "gin" ? "hand" : "round"} ${round}`;
}

/**
 * The check, once the seed is revealed: the seed against the commitment (and against `expected`'s
 * commitment and client seed, when the page had them before the game), then every deal the seat
 * saw against the deal the seeds derive: its own hand, the up-card or field, the first dealer's
 * draw. `subtle`: WebCrypto (the page's, or a test's).
 */
export async function checkDeal(
  record: ShuffleRecord,
  seat: number | undefined,
  expected: Expected = {},
  subtle?: ShuffleCrypto,
): Promise<DealCheck> {
  const failed = (why: string, details: string[] = []): DealCheck => ({
    ok: false,
    text: `The deal could not be confirmed: ${why}`,
    details,
  });
  const { kind } = record;
  if (!kind || !record.commitment) return failed("this game's first event was not seen.");
  if (!record.serverSeed) return failed("the server has not revealed its seed yet.");
  if (expected.commitment && expected.commitment.toLowerCase() !== record.commitment.toLowerCase())
    return failed("the game's commitment is not the one you were shown before it was created.");
  if (expected.clientSeed !== undefined && !record.clientSeeds.includes(expected.clientSeed))
    return failed("your own seed is not among the game's client seeds.");
  // The lobby's game takes the player's seed alone. Another seed beside it was chosen by whoever
  // saw the player's (the lobby, the server), who could try seed after seed until the deck suited.
  if (expected.clientSeed !== undefined && record.clientSeeds.length !== 1)
    return failed(
      "the game has a client seed besides yours, chosen after yours: whoever chose it could have picked the deck.",
    );
  if (!(await seedMatchesCommitment(record.serverSeed, record.commitment, subtle)))
    return failed(
      "the revealed seed is not the one sealed at the start (its sha256 is not the commitment).",
    );
  const seeds = { serverSeed: record.serverSeed, clientSeeds: record.clientSeeds };
  const wrong: string[] = [];
  const checked: string[] = [
    `The revealed seed's sha256 is the commitment shown from the start (${shortHex(record.commitment)}).`,
  ];
  let hands = 0;
  for (const deal of record.deals) {
    const name = dealName(kind, deal.round);
    const deck = await shuffleCards(
      deckOf(kind, record.jokers),
      seeds,
      deal.round,
      deal.purpose,
      subtle,
    );
    const derived = layout(kind, deck, record.seats, deal.dealer, seat);
    if (deal.hand && derived.hand) {
      hands++;
      if (sorted(deal.hand) !== sorted(derived.hand))
        wrong.push(`${name}: the hand you were dealt is not the one the seeds deal you.`);
    }
    if (deal.upcard && deal.upcard !== derived.upcard)
      wrong.push(`${name}: the up-card is not the seeds' (${derived.upcard ?? "none"}).`);
    if (deal.field.length && sorted(deal.field) !== sorted(derived.field))
      wrong.push(`${name}: the field is not the seeds'.`);
    // A redeal is owed only when the field showed four of a month: each deck it claims to have
    // thrown in must have, or the server could have picked among several decks the one to deal.
    const redeals = deal.purpose.startsWith(REDEAL) ? Number(deal.purpose.slice(REDEAL.length)) : 0;
    for (let n = 0; n < redeals; n++) {
      const thrown = await shuffleCards(
        deckOf(kind, record.jokers),
        seeds,
        deal.round,
        n === 0 ? DEAL : `${REDEAL}${n}`,
        subtle,
      );
      if (!fourOfAMonth(thrown.slice(KOIKOI_FIELD_AT, KOIKOI_FIELD_AT + KOIKOI_HAND))) {
        wrong.push(`${name}: it was dealt again though the seeds' deal needed no redeal.`);
        break;
      }
    }
    if (deal.draws.length) {
      const turned = await shuffleCards(
        kind === "koikoi" ? hanafudaDeck() : standardDeck(),
        seeds,
        1,
        FIRST_DEALER,
        subtle,
      );
      // The draw decides who deals, and so which cards each seat gets: the dealer named must be
      // the one the turned cards make, not only the cards turned.
      const drawn = drawnDealer(kind, turned, record.seats);
      if (deal.draws.join(" ") !== drawn.draws.join(" "))
        wrong.push(`${name}: the cards turned for the first dealer are not the seeds'.`);
      else if (deal.dealer !== drawn.dealer)
        wrong.push(`${name}: the dealer is not the one the seeds' draw makes.`);
    }
  }
  if (wrong.length) return failed(wrong[0] ?? "", wrong);
  const dealt = record.deals.length;
  checked.push(
    `${dealt} ${dealt === 1 ? "deal" : "deals"} derived again from the seed: ` +
      (hands ? "your hand, " : "") +
      "the cards dealt face up, the first dealer's draw and the dealer it makes match.",
  );
  // Said plainly, so that "Checked" is not read as more than it is: the stock's later cards are
  // not in a seat's own copy at the deal (the replay's verifier checks them: docs/shuffle.md).
  checked.push(
    "Not checked here: the cards drawn from the stock during play and any rebuilt stock (the whole deck is in the game's replay file, which the replay verifier, croupier replay verify, checks).",
  );
  // The commit-first flow's two promises, when this tab was there for them (the lobby's tab).
  const own = expected.clientSeed !== undefined;
  if (own)
    checked.push(
      "The game started from the commitment you were shown before your seed was drawn, and your seed is its only client seed.",
    );
  return {
    ok: true,
    text:
      (hands > 0
        ? `Your dealt hand matches the deck from the sealed seed${hands > 1 ? ` (all ${hands} deals)` : ""}.`
        : "The cards dealt face up match the deck from the sealed seed.") +
      (own
        ? " Your own seed, drawn after the server sealed its seed, was part of the shuffle."
        : ""),
    details: checked,
  };
}
