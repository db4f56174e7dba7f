// The event log in words: "Seat 1 discards J♦", "Seat 0 (you) ran out of time at 18:47:28",
// "Seat 0 (you), forced: draws 7♠ from the stock", "Round 1 ends: stop, won by Seat 2".
//
// Whose line it is comes from the event's own `seat` (the seat that drew, discarded, timed out),
// never from the command that caused it: a discard that ends the round is followed by the round's
// end, which nobody "did". A time-out is recorded by the service, with no command (GameEvent.seat
// unset), and the timed-out seat's forced moves follow it in the same way: they are its moves, made
// for it, and read so.
import type { GameEvent } from "@croupier/client/web";
import { Combination, YakuKind } from "@croupier/client/web";
import { cardText } from "./cards.js";
import { seatName, words } from "./render.js";

/** A card as events carry it: a French card (named by its code) or a Hanafuda card (which has a
 * month, and a name). */
interface AnyCard {
  readonly code: string;
  readonly name?: string;
  readonly month?: number;
}

interface CardGroup {
  readonly cards: readonly AnyCard[];
  readonly owner?: number;
}

/**
 * The fields of the games' events that the log reads. The four games name alike what is alike
 * (seat, card, cards, round, dealer, outcome…), so one reading serves every game's events; a
 * field an event lacks is undefined. Hidden cards (another seat's draw) are unset or empty. The
 * few names that mean different things in different events are `unknown`, read by type (see
 * `numberIn`, `meldIn`): `hand` (a number, a hand's cards), `hands` (a count, every hand),
 * `meld` (a meld, a meld's index), `deadwood` (one seat's, every seat's).
 */
interface EventFields {
  readonly seat?: number;
  readonly card?: AnyCard;
  readonly cards?: readonly AnyCard[];
  readonly captured?: readonly AnyCard[];
  readonly joker?: AnyCard;
  readonly upcard?: AnyCard;
  readonly field?: readonly AnyCard[];
  readonly meld?: unknown;
  readonly melds?: readonly CardGroup[];
  readonly dealerDraws?: readonly { readonly seat: number; readonly card?: AnyCard }[];
  readonly players?: readonly number[];
  readonly seats?: number;
  readonly round?: number;
  readonly rounds?: number;
  readonly hand?: unknown;
  readonly hands?: unknown;
  readonly dealer?: number;
  readonly outcome?: string;
  readonly winner?: number;
  readonly winners?: readonly number[];
  readonly points?: number;
  readonly deadlineMs?: bigint;
  readonly atMs?: bigint;
  readonly away?: boolean;
  readonly fromDiscard?: boolean;
  readonly discarder?: number;
  readonly opening?: number;
  readonly deadwood?: unknown;
  readonly deadwoodCards?: readonly AnyCard[];
  readonly gin?: boolean;
  readonly bigGin?: boolean;
  readonly awaitingChoice?: boolean;
  readonly yaku?: readonly { readonly kind: number; readonly points: number }[];
  readonly combination?: number;
  readonly handValue?: number;
  readonly voluntary?: boolean;
  readonly compensation?: number;
  readonly stockCount?: number;
  readonly tableMultiplier?: number;
  readonly redeals?: number;
  readonly reason?: string;
}

/** One line of the log: its words, the seat it is about (if one), and whether the service made
 * the move for that seat (a time-out's forced move). */
export interface LogLine {
  readonly text: string;
  readonly about: number | undefined;
  readonly forced: boolean;
}

/** What a seat did, after its name: "draws 7♠ from the stock". */
type SeatPhrase = (f: EventFields, mine: number) => string;
/** What happened at the table, a whole sentence: "Round 1 ends: stop, won by Seat 2". */
type TablePhrase = (f: EventFields, mine: number) => string;

/** One of EventFields' `unknown` fields where it is a number. */
function numberIn(value: unknown): number | undefined {
  return typeof value === "number" ? value : undefined;
}

/** EventFields' `meld` where it is a meld (not an index). */
function meldIn(value: unknown): CardGroup | undefined {
  return typeof value === "object" && value !== null && "cards" in value
    ? (value as CardGroup)
    : undefined;
}

/** A card by name: "Q♦", "Cherry curtain". */
function card(c: AnyCard | undefined): string {
  if (!c?.code) return "";
  return c.month ? (c.name ?? c.code) : cardText(c.code);
}

function cards(list: readonly AnyCard[] | undefined): string {
  return (list ?? []).map(card).filter(Boolean).join(" ");
}

/** "Seat 0 (you), Seat 2". */
function seatList(seats: readonly number[], mine: number): string {
  return seats.map((s) => seatName(s, mine)).join(", ");
}

/** A Unix time in ms as the clock on the wall shows it: "18:47:28". */
export function clockTime(ms: bigint | number): string {
  return new Date(Number(ms)).toLocaleTimeString(undefined, {
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
  });
}

/** "Seat 1's meld", "its own meld", "a meld". */
function whoseMeld(f: EventFields, mine: number): string {
  const owner = meldIn(f.meld)?.owner;
  if (owner === undefined) return "a meld";
  return owner === f.seat ? "its own meld" : `${seatName(owner, mine)}'s meld`;
}

function drawn(f: EventFields): string {
  if (f.fromDiscard) return `takes the discard ${card(f.card)}`.trim();
  return f.card?.code ? `draws ${card(f.card)} from the stock` : "draws from the stock";
}

/** "takes the discard Q♣ (Seat 2's) and melds Q♣ Q♦ Q♥": Hoola names whose discard it was and
 * the meld it went into. */
function discardTaken(f: EventFields, mine: number): string {
  const meld = meldIn(f.meld);
  const whose =
    f.discarder !== undefined && f.discarder !== f.seat
      ? ` (${seatName(f.discarder, mine)}'s)`
      : "";
  return `takes the discard ${card(f.card)}${whose}${meld ? ` and melds ${cards(meld.cards)}` : ""}`;
}

function knocked(f: EventFields): string {
  if (f.bigGin) return "goes big gin: all eleven cards melded";
  const discard = f.card?.code ? `, discarding ${card(f.card)}` : "";
  // The knocker lays its whole hand face up: a defender choosing its lay-offs sees the melds on
  // the table, and here the unmatched cards (Knocked.deadwood_cards), which take no lay-off.
  const loose = cards(f.deadwoodCards);
  return f.gin
    ? `goes gin${discard}`
    : `knocks${discard}, with ${numberIn(f.deadwood) ?? 0} deadwood${loose ? `: ${loose}` : ""}`;
}

function played(f: EventFields): string {
  const caught = cards(f.captured);
  return `plays ${card(f.card)}${caught ? ` and captures ${caught}` : " to the field"}`;
}

function turned(f: EventFields): string {
  const caught = cards(f.captured);
  const then = caught
    ? ` and captures ${caught}`
    : f.awaitingChoice
      ? ", which matches two field cards: one to choose"
      : " to the field";
  return `turns ${card(f.card)} from the stock${then}`;
}

function yaku(f: EventFields): string {
  const formed = f.yaku ?? [];
  const name = (y: { kind: number }) => words(YakuKind[y.kind] ?? "yaku");
  // Each one's points only when there are several: the total follows.
  const each = formed.map((y) => (formed.length > 1 ? `${name(y)} (${y.points})` : name(y)));
  return `forms ${each.join(", ") || "a yaku"}: ${f.points ?? 0} points`;
}

/** "1 round", "3 rounds". */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

function away(f: EventFields, mine: number): string {
  if (!f.away) return "";
  return f.seat === mine
    ? "; you are away now: your turns are played for you until you make a move"
    : "; away now: its turns are played for it until it comes back";
}

/** What each seat's event says it did, by the event's name (the same in every game that has it). */
const SEAT_PHRASES: Record<string, SeatPhrase> = {
  turnTimedOut: (f, mine) =>
    `ran out of time${f.deadlineMs ? ` at ${clockTime(f.deadlineMs)}` : ""}${away(f, mine)}`,
  turnRestarted: (f) =>
    `has its turn time again from ${f.atMs ? clockTime(f.atMs) : "now"}: the server was away when it ran out`,
  cardDrawn: drawn,
  discardTaken,
  upcardPassed: () => "passes on the upcard",
  meldMade: (f) => `melds ${cards(meldIn(f.meld)?.cards)}`,
  meldsLaidDown: (f) =>
    `lays down ${(f.melds ?? []).map((m) => cards(m.cards)).join(" and ")}` +
    (f.opening ? ` (opening with ${f.opening} points)` : ""),
  cardsLaidOff: (f, mine) => `lays off ${cards(f.cards)} on ${whoseMeld(f, mine)}`,
  cardLaidOff: (f) => `lays off ${card(f.card)} on the knocker's melds`,
  layOffsEnded: (f) => `is done laying off, with ${numberIn(f.deadwood) ?? 0} deadwood`,
  sevensBound: (f) => `binds the sevens ${cards(f.cards)}`,
  jokerSwapped: (f) =>
    `puts ${card(f.card)} in a meld and takes back the ${card(f.joker) || "Joker"}`,
  cardDiscarded: (f) => `discards ${card(f.card)}`,
  knocked,
  stopCalled: (f) => `calls stop, with a hand worth ${f.handValue ?? 0}`,
  combinationDeclared: (f) =>
    `declares ${words(Combination[f.combination ?? 0] ?? "a combination")}`,
  claimMade: (f) =>
    `claims the discard out of turn${f.cards?.length ? ` with ${cards(f.cards)}` : ""}`,
  playDeclared: () => "plays this round",
  satOut: (f) =>
    `sits out this round${f.voluntary ? "" : ": five seats already play"}` +
    (f.compensation ? `; each player owes it ${f.compensation}` : ""),
  cardPlayed: played,
  cardTurned: turned,
  captureChosen: (f) => `captures ${cards(f.captured)} with ${card(f.card)}`,
  yakuFormed: yaku,
  koiKoiCalled: () => "calls koi-koi: plays on for more",
  shobuCalled: () => "calls shobu: ends the round",
  seatLeft: () => "leaves the table",
  seatForfeited: () => "forfeits: away for too long",
  cameBack: () => "is back: plays its own turns again",
};

/** A seat's events that are no move of its own, forced or not: what the service records about
 * it, and what follows from its move (a yaku is formed by the capture that made it). */
const NOT_MOVES = new Set([
  "turnTimedOut",
  "turnRestarted",
  "seatForfeited",
  "seatLeft",
  "cameBack",
  "yakuFormed",
]);

function dealt(what: string, f: EventFields, mine: number): string {
  const parts = [f.dealer === undefined ? what : `${what}, ${seatName(f.dealer, mine)} dealing`];
  if (f.dealerDraws?.length)
    parts.push(
      `drawn for the deal: ${f.dealerDraws.map((d) => `${seatName(d.seat, mine)} ${card(d.card)}`).join(", ")}`,
    );
  if (f.upcard?.code) parts.push(`first card up: ${card(f.upcard)}`);
  if (f.field?.length) parts.push(`${f.field.length} cards on the field`);
  if (f.tableMultiplier && f.tableMultiplier > 1) parts.push(`stakes ×${f.tableMultiplier}`);
  return parts.join("; ");
}

function ended(what: string, f: EventFields, mine: number): string {
  const winners = f.winners?.length ? f.winners : f.winner === undefined ? [] : [f.winner];
  const won = winners.length ? `, won by ${seatList(winners, mine)}` : "";
  const points = f.points ? ` (${f.points} points)` : "";
  return `${what} ends: ${words(f.outcome ?? "") || "over"}${won}${points}`;
}

/** What happened at the table, by the event's name: the deal, the round's and the game's end. */
const TABLE_PHRASES: Record<string, TablePhrase> = {
  gameStarted: (f) => `The game starts, with ${f.seats ?? 0} seats`,
  matchStarted: (f) => `The match starts, with ${f.seats ?? 0} seats`,
  roundDealt: (f, mine) =>
    dealt(f.round ? `Round ${f.round} is dealt` : "The cards are dealt", f, mine),
  handDealt: (f, mine) => dealt(`Hand ${numberIn(f.hand) ?? ""} is dealt`, f, mine),
  playBegan: (f, mine) => `Play begins: ${seatList(f.players ?? [], mine)} play this round`,
  stockReshuffled: (f) =>
    `The discards are shuffled into a new stock${f.stockCount ? ` of ${f.stockCount} cards` : ""}`,
  roundEnded: (f, mine) => ended(f.round ? `Round ${f.round}` : "The round", f, mine),
  handEnded: (f, mine) => ended(`Hand ${numberIn(f.hand) ?? ""}`, f, mine),
  matchEnded: (f) => {
    const hands = numberIn(f.hands);
    const played = f.rounds ? count(f.rounds, "round") : hands ? count(hands, "hand") : "";
    return `The match is over${played ? ` after ${played}` : ""}`;
  },
  tableClosed: (f) => `The table is closed${f.rounds ? ` after ${count(f.rounds, "round")}` : ""}`,
  studioEndedGame: (f) =>
    `The studio ends the game${f.reason ? ` (${f.reason})` : ""}: what was scored stands`,
};

/** Fields a line never shows: the big parts have their own places on the page (rules, hands,
 * settlements), and hashes, seeds and ids say nothing to people. */
const SKIPPED = new Set([
  "rules",
  "hands",
  "settlement",
  "lines",
  "totals",
  "handValues",
  "seat",
  "id",
  "owner",
  "kind",
  "stock",
  "commitment",
  "clientSeeds",
  "engineVersion",
]);
/** A hex digest or seed: never shown. */
const HASH = /^[0-9a-f]{32,}$/i;

/** An event this page has no words for (a newer server's): its fields on one short line. */
function short(value: unknown, depth = 0): string {
  if (value === null || value === undefined) return "";
  if (typeof value === "bigint" || typeof value === "number" || typeof value === "boolean")
    return String(value);
  if (typeof value === "string") return HASH.test(value) ? "" : value;
  if (Array.isArray(value))
    return value
      .map((v) => short(v, depth + 1))
      .filter(Boolean)
      .join(" ");
  if (typeof value !== "object") return "";
  const o = value as Record<string, unknown>;
  if (typeof o.code === "string") return card(o as unknown as AnyCard);
  if (depth > 2) return "";
  const parts = [];
  for (const [key, field] of Object.entries(o)) {
    if (key.startsWith("$") || SKIPPED.has(key)) continue;
    const text = short(field, depth + 1);
    if (text && text !== "0" && text !== "false") parts.push(`${words(key)} ${text}`);
  }
  return parts.join("; ");
}

/** The longest line an unknown event gets. */
const MAX_UNKNOWN = 160;

/**
 * Tells a game's events as lines, in order. It remembers the last time-out, so that the moves the
 * service makes for that seat read as forced; a command (an event with GameEvent.seat) ends that.
 */
export class EventNarrator {
  private timedOut: number | undefined;

  constructor(private readonly mine: number) {}

  describe(event: GameEvent): LogLine {
    const body = event.body?.body;
    if (event.seat !== undefined) this.timedOut = undefined;
    if (!body?.case) return { text: "(hidden from you)", about: undefined, forced: false };
    if (body.case === "seedRevealed")
      return {
        text: "The game is over: its seed is revealed, so anyone can check the deal (timeline)",
        about: undefined,
        forced: false,
      };
    const game = body.value as { event?: { case?: string; value?: unknown } };
    const kind = game.event?.case;
    if (!kind) return { text: "(hidden from you)", about: undefined, forced: false };
    // One reading for every game's events: see EventFields.
    const f = (game.event?.value ?? {}) as EventFields;
    if (kind === "turnTimedOut") this.timedOut = f.seat;
    return this.line(kind, f, event.seat === undefined);
  }

  private line(kind: string, f: EventFields, byService: boolean): LogLine {
    const seatPhrase = SEAT_PHRASES[kind];
    if (seatPhrase && f.seat !== undefined) {
      const forced = byService && f.seat === this.timedOut && !NOT_MOVES.has(kind);
      const who = seatName(f.seat, this.mine);
      const text = `${who}${forced ? ", forced:" : ""} ${seatPhrase(f, this.mine)}`;
      return { text, about: f.seat, forced };
    }
    const tablePhrase = TABLE_PHRASES[kind];
    if (tablePhrase) return { text: tablePhrase(f, this.mine), about: undefined, forced: false };
    const details = short(f).slice(0, MAX_UNKNOWN);
    const who = f.seat === undefined ? "" : `${seatName(f.seat, this.mine)}: `;
    return {
      text: `${who}${words(kind)}${details ? ` (${details})` : ""}`,
      about: f.seat,
      forced: false,
    };
  }
}
