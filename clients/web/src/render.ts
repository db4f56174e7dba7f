// What the page shows of a game: small render functions, one per game kind for the table, and
// game-agnostic ones for the seats and their clocks, the settlement and the events.
import type {
  GinView,
  HoolaView,
  KoiKoiView,
  RummyView,
  SeatToAct,
  Settlement,
  View,
} from "@croupier/client/web";
import {
  GinPhase,
  HoolaPhase,
  KoiKoiPhase,
  MeldKind,
  MeldShape,
  RummyPhase,
  YakuKind,
} from "@croupier/client/web";
import { cardRow, cardTile, hanafudaTile, prettyLabel, readable } from "./cards.js";

/** An element with a class and text (or children). */
export function h(tag: string, className = "", ...children: (Node | string)[]): HTMLElement {
  const node = document.createElement(tag);
  if (className) node.className = className;
  node.append(...children);
  return node;
}

/** "HAND_OVER" → "hand over". */
export function words(name: string): string {
  return name
    .replace(/([a-z])([A-Z])/g, "$1 $2")
    .replace(/_/g, " ")
    .toLowerCase();
}

export function seatName(seat: number, mine: number): string {
  return seat === mine ? `Seat ${seat} (you)` : `Seat ${seat}`;
}

/** `old` made like `fresh` in place, changing only what differs (its text, attributes and
 * children): a part of the page drawn again and again (the seats and their clocks every half
 * second, the table after every move) would otherwise be new elements each time, and a screen
 * reader reading it loses its place. `old` keeps its own attributes (its class, its role). */
export function morph(old: Element, fresh: Element): void {
  const before = [...old.childNodes];
  const after = [...fresh.childNodes];
  for (let i = 0; i < after.length; i++) {
    const a = before[i];
    const b = after[i] as Node;
    if (a && a.nodeType === Node.TEXT_NODE && b.nodeType === Node.TEXT_NODE) {
      if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue;
    } else if (a instanceof Element && b instanceof Element && a.tagName === b.tagName) {
      for (const { name } of [...a.attributes]) if (!b.hasAttribute(name)) a.removeAttribute(name);
      for (const { name, value } of [...b.attributes])
        if (a.getAttribute(name) !== value) a.setAttribute(name, value);
      morph(a, b);
    } else if (a) {
      old.replaceChild(b, a);
    } else {
      old.append(b);
    }
  }
  for (const extra of before.slice(after.length)) extra.remove();
}

/** A fact about the caller's own hand, for a seat only: a spectator (no `seat`) holds none, and
 * "Your deadwood 0" told it of a hand it does not have. */
function yours(seat: number | undefined, term: string, value: string): [string, string][] {
  return seat === undefined ? [] : [[term, value]];
}

/** The facts of a table as a definition list. */
function facts(pairs: [string, string | Node][]): HTMLElement {
  const list = h("dl", "facts");
  for (const [term, value] of pairs) list.append(h("dt", "", term), h("dd", "", value));
  return list;
}

function discardPile(top: { code: string } | undefined, count: number): HTMLElement {
  const pile = h(
    "span",
    "discard",
    top ? cardTile(top as never) : "empty",
    count > 1 ? ` (${count} cards)` : "",
  );
  pile.dataset.count = String(count); // for the tests
  return pile;
}

/** The seat a view is for: the caller's token's, as the server says (every game's view has it);
 * undefined for a spectator's. */
export function viewerSeat(view: View): number | undefined {
  return view.game.case ? view.game.value.seat : undefined;
}

/** What a seat holds in its hand, for the caller. */
export function handOf(view: View): HTMLElement {
  switch (view.game.case) {
    case "koikoi":
      return cardRow(view.game.value.hand.map(hanafudaTile), "no cards");
    case "hoola":
    case "gin":
    case "rummy":
      return cardRow(view.game.value.hand.map(cardTile), "no cards");
    default:
      return h("p", "", "no view");
  }
}

/** A meld on the table by the number the moves name it by ("Lay off 9♠ on meld #4"): without it
 * a player cannot tell which meld a lay-off or a joker swap is for. */
function meldTitle(id: number, kind: string, owner: number): string {
  return `#${id} ${kind} by seat ${owner}: `;
}

function hoolaTable(v: HoolaView): HTMLElement {
  const melds = v.melds.map((m) =>
    h(
      "li",
      "",
      meldTitle(m.id, words(MeldKind[m.kind] ?? ""), m.owner),
      cardRow(m.cards.map(cardTile)),
    ),
  );
  return h(
    "div",
    "",
    facts([
      ["Phase", words(HoolaPhase[v.phase] ?? "")],
      [
        "Round",
        `${v.round}${v.rules?.rounds ? ` of ${v.rules.rounds}` : ""} (dealer: seat ${v.dealer})`,
      ],
      ["Stock", `${v.stockCount} cards`],
      ["Discard", discardPile(v.discardTop, v.discardCount)],
      ["Stakes ×", `${v.tableMultiplier || 1}`],
      ...yours(v.seat, "Your hand's value", `${v.handValue}`),
    ]),
    h("h3", "", "Melds on the table"),
    v.melds.length ? h("ul", "melds", ...melds) : h("p", "", "none yet"),
  );
}

/** Rummy's discard pile: the top card, which alone may be taken (and only into a meld or a
 * lay-off at once, so a seat with no such move cannot take it). */
function rummyDiscard(v: RummyView): [string, Node][] {
  const top: [string, Node] = ["Discard", discardPile(v.discardTop, v.discardCount)];
  if (!v.discardTop) return [top];
  return [top, ["Taking it", h("span", "", "the top card only, to meld it or lay it off at once")]];
}

/** The cards under the discard pile's top, newest first, as the events told them (pile.ts):
 * the width of the table to themselves, a phone's too. None when not known or none. */
function underTheDiscard(under: readonly string[] | undefined): HTMLElement[] {
  if (!under?.length) return [];
  return [
    h(
      "div",
      "under-discard",
      h("h3", "", `Under the top discard, newest first (${under.length})`),
      cardRow(under.map((code) => cardTile(code))),
    ),
  ];
}

function rummyTable(v: RummyView, under: readonly string[] | undefined): HTMLElement {
  const melds = v.melds.map((m) =>
    h(
      "li",
      "",
      meldTitle(m.id, words(MeldShape[m.kind] ?? ""), m.owner),
      cardRow(m.cards.map(cardTile)),
    ),
  );
  return h(
    "div",
    "",
    facts([
      ["Phase", words(RummyPhase[v.phase] ?? "")],
      ["Dealer", `seat ${v.dealer}`],
      ["Stock", `${v.stockCount} cards`],
      ...rummyDiscard(v),
      ["Opened", v.opened.map((o, seat) => `seat ${seat} ${o ? "yes" : "no"}`).join(", ")],
      // What an opening needs, else a seat that holds melds sees no move to lay them and no why.
      ...(v.rules?.openThreshold
        ? ([["To open", `melds worth ${v.rules.openThreshold} or more`]] as [string, string][])
        : []),
      ...yours(v.seat, "Your hand's value", `${v.handValue}`),
    ]),
    ...underTheDiscard(under),
    h("h3", "", "Melds on the table"),
    v.melds.length ? h("ul", "melds", ...melds) : h("p", "", "none yet"),
  );
}

function ginTable(v: GinView): HTMLElement {
  const placed = (melds: GinView["melds"]) =>
    h(
      "ul",
      "melds",
      ...melds.map((m) =>
        h("li", "", `${words(MeldShape[m.kind] ?? "")}: `, cardRow(m.cards.map(cardTile))),
      ),
    );
  return h(
    "div",
    "",
    facts([
      ["Phase", words(GinPhase[v.phase] ?? "")],
      ["Hand", `${v.handNumber} (dealer: seat ${v.dealer})`],
      ["Stock", `${v.stockCount} cards`],
      ["Discard", discardPile(v.discardTop, v.discardCount)],
      ...yours(v.seat, "Your deadwood", `${v.deadwood}`),
    ]),
    // A spectator has no hand to arrange (its view's melds are empty).
    ...(v.seat === undefined
      ? []
      : [
          h("h3", "", "Your melds (arranged for the least deadwood)"),
          v.melds.length ? placed(v.melds) : h("p", "", "none"),
        ]),
    ...(v.knocker !== undefined
      ? [h("h3", "", `Seat ${v.knocker} knocked: its melds`), placed(v.table)]
      : []),
  );
}

function koikoiTable(v: KoiKoiView): HTMLElement {
  const piles = v.piles.map((p) =>
    h(
      "li",
      "",
      `Seat ${p.seat}: ${p.cards.length} cards captured, ${p.points} points`,
      p.yaku.length
        ? ` — ${p.yaku.map((y) => `${words(YakuKind[y.kind] ?? "")} ${y.points}`).join(", ")}`
        : "",
      cardRow(p.cards.map(hanafudaTile), ""),
    ),
  );
  return h(
    "div",
    "",
    facts([
      ["Phase", words(KoiKoiPhase[v.phase] ?? "")],
      [
        "Round",
        `${v.round}${v.rules?.rounds ? ` of ${v.rules.rounds}` : ""} (dealer: seat ${v.dealer})`,
      ],
      ["Stock", `${v.stockCount} cards`],
      ["Koi-koi called by", v.koiKoiBy === undefined ? "nobody" : `seat ${v.koiKoiBy}`],
      ...(v.turned ? ([["Turned card", hanafudaTile(v.turned)]] as [string, Node][]) : []),
    ]),
    h("h3", "", "Field"),
    cardRow(v.field.map(hanafudaTile), "empty"),
    h("h3", "", "Captured"),
    h("ul", "piles", ...piles),
  );
}

/** The table of any game kind; `discards`: Rummy's discard pile under its top card, newest
 * first, if known (pile.ts). */
export function tableOf(view: View, discards?: readonly string[]): HTMLElement {
  switch (view.game.case) {
    case "hoola":
      return hoolaTable(view.game.value);
    case "koikoi":
      return koikoiTable(view.game.value);
    case "gin":
      return ginTable(view.game.value);
    case "rummy":
      return rummyTable(view.game.value, discards);
    default:
      return h("p", "", "no view");
  }
}

/** The last finished round's settlement, as the view carries it. */
export function lastSettlement(view: View): Settlement | undefined {
  switch (view.game.case) {
    case "hoola":
      return view.game.value.lastRound?.settlement;
    case "koikoi":
      return view.game.value.lastRound?.settlement;
    case "gin":
      return view.game.value.lastHand?.settlement;
    case "rummy":
      return view.game.value.result?.settlement;
    default:
      return undefined;
  }
}

/** Hoola's last round, as its end showed it to every seat: each seat's hand and its value with
 * every multiplier (the round's note, "another hand was as low", is checked against these), in
 * seat order; none before a round has ended. */
export function handsAtRoundEnd(view: View): { seat: number; value: number; cards: string[] }[] {
  if (view.game.case !== "hoola") return [];
  const round = view.game.value.lastRound;
  if (!round) return [];
  return round.hands
    .map((hand) => ({
      seat: hand.seat,
      value: round.handValues[hand.seat] ?? 0,
      cards: hand.cards.map((card) => card.code),
    }))
    .sort((a, b) => a.seat - b.seat);
}

/** The hands at the last round's end (handsAtRoundEnd), for the round's result box. */
export function roundHandsOf(view: View, mine: number): HTMLElement | undefined {
  const hands = handsAtRoundEnd(view);
  if (!hands.length) return undefined;
  return h(
    "div",
    "round-hands",
    h("h3", "", "Hands at the round's end"),
    h(
      "ul",
      "",
      ...hands.map((hand) =>
        h(
          "li",
          "",
          `${seatName(hand.seat, mine)}: value ${hand.value} `,
          cardRow(hand.cards.map(cardTile), "no cards: went out"),
        ),
      ),
    ),
  );
}

/** Per seat: cards held, score (undefined for a game that keeps none: Rummy is one round, its
 * settlement the score), whose turn it is. */
export function seatsOf(view: View): {
  seats: number;
  counts: number[];
  scores: string[] | undefined;
  turn: number;
} {
  const g = view.game;
  switch (g.case) {
    case "hoola":
      return {
        seats: g.value.handCounts.length,
        counts: g.value.handCounts,
        scores: g.value.scores.map(String),
        turn: g.value.turn,
      };
    case "koikoi":
      return {
        seats: g.value.handCounts.length,
        counts: g.value.handCounts,
        scores: g.value.totals.map(String),
        turn: g.value.turn,
      };
    case "gin":
      return {
        seats: g.value.handCounts.length,
        counts: g.value.handCounts,
        scores: g.value.totals.map(String),
        turn: g.value.turn,
      };
    case "rummy":
      return {
        seats: g.value.handCounts.length,
        counts: g.value.handCounts,
        scores: undefined,
        turn: g.value.turn,
      };
    default:
      return { seats: 0, counts: [], scores: undefined, turn: 0 };
  }
}

/** The turn's own time in a view's rules (`turn_time_ms`; 0: no clock), whatever the game. */
export function turnTimeOf(view: View): number {
  return view.game.case ? (view.game.value.rules?.turnTimeMs ?? 0) : 0;
}

/** From how much time left a seat is warned that its time is short: 10 s, or half of what the
 * step had on a shorter clock (at 10 s of a 12 s turn, the warning would be up from the start and
 * warn of nothing). */
export const LOW_TIME_MS = 10_000;

/** Whether a seat with `leftMs` to its deadline is short of time, on a step that had `stepMs` in
 * all (its turn time and its bank: the deadline holds both, so "left" is all the seat has). A
 * deadline passed whose time-out is not recorded yet is short too: the seat may still beat it. */
export function timeIsShort(leftMs: number, stepMs: number): boolean {
  return leftMs <= Math.min(LOW_TIME_MS, stepMs / 2);
}

/** The time the step of a seat on the clock had in all: the turn's and what its bank holds. */
export function stepTimeOf(view: View, toAct: SeatToAct): number {
  return turnTimeOf(view) + Number(toAct.bankMs);
}

/** A duration in words: "0:42". */
export function clock(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** "35 seconds", "1 minute 5 seconds". */
function duration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / MS_PER_SECOND));
  const minutes = Math.floor(s / SECONDS_PER_MINUTE);
  const seconds = s % SECONDS_PER_MINUTE;
  const part = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  if (!minutes) return part(seconds, "second");
  return seconds
    ? `${part(minutes, "minute")} ${part(seconds, "second")}`
    : part(minutes, "minute");
}

const MS_PER_SECOND = 1000;
const SECONDS_PER_MINUTE = 60;

/**
 * A seat's time on the clock: `leftMs` to its deadline, which holds the turn's own time and then
 * its bank (`bankMs`). "0:05 left, bank 0:05" read as if the bank came on top of the five
 * seconds: the time left is all there is, the bank spent last. Shown: "0:35 left (0:30 turn +
 * 0:05 bank)", "0:04 left, all bank"; heard: "35 seconds left to act, 5 of them from the bank".
 */
export function timeLeft(leftMs: number, bankMs: number): { shown: string; spoken: string } {
  const left = Math.max(0, leftMs);
  const bank = Math.min(Math.max(0, bankMs), left);
  const turn = left - bank;
  const shown = `to act: ${clock(left)} left`;
  const spoken = `${duration(left)} left to act`;
  if (bank <= 0) return { shown, spoken };
  if (clock(turn) === clock(0))
    return { shown: `${shown}, all bank`, spoken: `${spoken}, all of it from the bank` };
  return {
    shown: `${shown} (${clock(turn)} turn + ${clock(bank)} bank)`,
    spoken: `${spoken}: ${duration(turn)} of the turn, then ${duration(bank)} from the bank`,
  };
}

/** `node` kept from screen readers (its words are given to them otherwise). */
function ariaHidden(node: HTMLElement): HTMLElement {
  node.setAttribute("aria-hidden", "true");
  return node;
}

/** "1 card", "7 cards". */
function cardCount(count: number): string {
  return count === 1 ? "1 card" : `${count} cards`;
}

/** The seats, each with its hand size, score, and (from `to_act`) its turn clock: the time left
 * to its deadline, its bank, whether it is away. Game-agnostic but for the counts. */
export function seatsPanel(view: View, toAct: SeatToAct[], mine: number, now: number): HTMLElement {
  const { seats, counts, scores } = seatsOf(view);
  const acting = new Map(toAct.map((t) => [t.seat, t]));
  const rows = [];
  for (let seat = 0; seat < seats; seat++) {
    const t = acting.get(seat);
    let turn = "";
    let spokenTurn = "";
    let short = false;
    if (t) {
      const deadline = Number(t.deadlineMs);
      short = Boolean(deadline) && timeIsShort(deadline - now, stepTimeOf(view, t));
      const timed = deadline ? timeLeft(deadline - now, Number(t.bankMs)) : undefined;
      turn = timed ? timed.shown : t.turn ? "to act" : "may act";
      spokenTurn = timed ? timed.spoken : turn;
      if (t.away) {
        turn += " (away)";
        spokenTurn += " (away)";
      }
    }
    const row = h(
      "tr",
      t ? "acting" : "",
      h("td", "", seatName(seat, mine)),
      h("td", "", cardCount(counts[seat] ?? 0)),
      ...(scores ? [h("td", "", scores[seat] ?? "")] : []),
      // Short of time: marked (style.css), as the page's own warning is (main.ts, drawHurry).
      // Seen at a glance ("0:35 left (0:30 turn + 0:05 bank)"), heard in words.
      h(
        "td",
        short ? "clock short" : "clock",
        ...(turn === spokenTurn
          ? [turn]
          : [ariaHidden(h("span", "", turn)), h("span", "sr-only", spokenTurn)]),
      ),
    );
    row.dataset.seat = String(seat);
    rows.push(row);
  }
  const headings = ["Seat", "Hand", ...(scores ? ["Score"] : []), "Turn"];
  return h(
    "table",
    "seats",
    h("caption", "sr-only", "Seats"),
    h("thead", "", h("tr", "", ...headings.map((heading) => h("th", "", heading)))),
    h("tbody", "", ...rows),
  );
}

/** How a payment's factor works on its amount (common.proto, Factor), as the replay timeline
 * writes it: the first sets it (`=`) whatever its kind, a later `added` one adds its value (`+`),
 * any other multiplies (`×`). A leading "×" or "+" read as if the amount had been multiplied or
 * added to from something unsaid (a table's close pays one added factor, its balance). */
export function factorSign(index: number, factor: { added: boolean }): string {
  if (index === 0) return "=";
  return factor.added ? "+" : "×";
}

/** How the name of a factor that is a rule option's multiplier ends. */
const MULTIPLIER = "_multiplier";

/** A factor's name as people read it beside its value, as the replay timeline writes it
 * (`factor_label` in engine/settlement.py). A liability's added factor (Hoola's stop and thank-you
 * penalties) is recorded under its option's name, but its value is the amount it adds (another
 * loser's payment × the option, as its reason says): "stop penalty multiplier 16" read as a ×16
 * where the table plays ×4. */
export function factorLabel(factor: { name: string; added: boolean }): string {
  return factor.added && factor.name.endsWith(MULTIPLIER)
    ? factor.name.slice(0, -MULTIPLIER.length)
    : factor.name;
}

/** Factors whose recorded name is the engine's word, said in a player's, as the replay timeline
 * and the demo say them (`FACTOR_WORDS` in engine/settlement.py: a test keeps the two alike). */
export const FACTOR_WORDS: Readonly<Record<string, string>> = {
  table_balance: "balance paid at the table's close",
  table_multiplier: "stakes raised after Hoola rounds",
};

/** A factor's name in words beside its value, as the timeline says it (`factor_words`). */
export function factorWords(factor: { name: string; added: boolean }): string {
  return FACTOR_WORDS[factor.name] ?? words(factorLabel(factor));
}

/** The status line for a seat with `moves` to make and the seats `toAct` (turn: the game waits on
 * it): "Your move." only when the game waits on this seat (or on nobody in particular); a seat
 * that may act only out of turn (claim a discard in battle Hoola) is told whom the game waits on,
 * and that it may act before them. */
export function statusFor(
  toAct: readonly { seat: number; turn: boolean }[],
  seat: number | undefined,
  moves: number,
  mine: number,
): string {
  const waited = toAct.filter((t) => t.turn);
  const names = (list: readonly { seat: number }[]) =>
    list.map((t) => seatName(t.seat, mine)).join(", ");
  if (moves) {
    const mineWaited = waited.some((t) => t.seat === seat);
    if (mineWaited || !waited.length) return "Your move.";
    return `Waiting for ${names(waited)}; meanwhile you may act out of turn (your moves below), until they do.`;
  }
  if (!toAct.length) return "Waiting…";
  return `Waiting for ${names(waited.length ? waited : toAct)}…`;
}

/** The moves of a seat between rounds (or Gin's hands): deal the next, leave, close the table.
 * Any seat may make them, whoever the game waits on; the lobby's bots never do (service/lobby.py,
 * BETWEEN_ROUNDS): they leave them to the people at the table. */
export const BETWEEN_ROUNDS_MOVES: ReadonlySet<string> = new Set([
  "nextRound",
  "nextHand",
  "closeTable",
  "leaveTable",
]);

/** The status line of a seat that may deal the next round (`noun`: "round", Gin's "hand") while
 * the game waits on `waited` (on a turn clock, the seat whose clock runs to deal it). "Waiting
 * for Seat 1" had a player wait for ever on a lobby bot, which never deals: the player may. */
export function betweenRoundsStatus(
  waited: readonly number[],
  bots: ReadonlySet<number>,
  mine: number,
  noun: string,
): string {
  const others = waited.filter((seat) => seat !== mine);
  const base = `The ${noun} is over: deal the next one when you are ready (your moves below).`;
  if (!others.length) return base;
  const names = others.map((seat) => seatName(seat, mine)).join(", ");
  if (others.every((seat) => bots.has(seat)))
    return `${base} ${names} ${others.length === 1 ? "is a bot" : "are bots"}: bots leave the next deal to people.`;
  return `${base} ${names} may deal it too.`;
}

/** An itemized settlement: every payment with every factor and its reason, and the nets. */
export function settlementOf(title: string, s: Settlement, mine: number): HTMLElement {
  const winners = s.winners.length ? s.winners.map((w) => seatName(w, mine)).join(", ") : "nobody";
  const lines = s.lines.map((line) =>
    h(
      "tr",
      "",
      h("td", "", `${seatName(line.payer, mine)} → ${seatName(line.payee, mine)}`),
      h("td", "amount", String(line.amount)),
      h(
        "td",
        "",
        h(
          "ul",
          "factors",
          ...line.factors.map((f, index) =>
            h(
              "li",
              "",
              `${factorSign(index, f)} ${factorWords(f)} ${f.value}`,
              ...(f.reason ? readable(`: ${prettyLabel(f.reason)}`) : []),
            ),
          ),
        ),
        line.summary ? h("p", "summary", ...readable(prettyLabel(line.summary))) : "",
      ),
    ),
  );
  return h(
    "section",
    "settlement",
    h("h3", "", `${title}: ${words(s.outcome)} — won by ${winners}`),
    ...(s.notes.length
      ? [h("ul", "notes", ...s.notes.map((n) => h("li", "", ...readable(prettyLabel(n)))))]
      : []),
    lines.length
      ? h(
          "table",
          "lines",
          h(
            "thead",
            "",
            h("tr", "", h("th", "", "Payment"), h("th", "", "Amount"), h("th", "", "Factors")),
          ),
          h("tbody", "", ...lines),
        )
      : h("p", "", "no payments"),
    h(
      "p",
      "net",
      "Net: " +
        s.net.map((n, seat) => `${seatName(seat, mine)} ${n > 0n ? "+" : ""}${n}`).join(", "),
    ),
  );
}
