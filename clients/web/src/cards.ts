// Cards as people read them: "Q♦", "10♥", "Joker"; Hanafuda cards by name ("Cherry curtain").
// And as a screen reader should say them, which may read "♦" as nothing at all: "queen of
// diamonds"; a Hanafuda card by its name, month and kind ("Cherry curtain, March, bright").
import type { Card, HanafudaCard } from "@croupier/client/web";
import { HanafudaKind } from "@croupier/client/web";

const SUITS: Record<string, string> = { S: "♠", H: "♥", D: "♦", C: "♣" };
const RED = new Set(["H", "D"]);
const RANKS: Record<string, string> = { T: "10", A: "A", J: "J", Q: "Q", K: "K" };
const MONTHS = [
  "",
  "Jan",
  "Feb",
  "Mar",
  "Apr",
  "May",
  "Jun",
  "Jul",
  "Aug",
  "Sep",
  "Oct",
  "Nov",
  "Dec",
];
const MONTH_WORDS = [
  "",
  "January",
  "February",
  "March",
  "April",
  "May",
  "June",
  "July",
  "August",
  "September",
  "October",
  "November",
  "December",
];
const SUIT_WORDS: Record<string, string> = { S: "spades", H: "hearts", D: "diamonds", C: "clubs" };
const RANK_WORDS: Record<string, string> = {
  T: "10",
  A: "ace",
  J: "jack",
  Q: "queen",
  K: "king",
};
/** The suits' symbols back to their letters, and a card as cardText writes it ("Q♦", "10♥"). */
const SYMBOL_SUITS: Record<string, string> = { "♠": "S", "♥": "H", "♦": "D", "♣": "C" };
const WRITTEN = /\b(10|[2-9AJQK])([♠♥♦♣])/g;
/** A card code of a French deck: rank, suit, and the deck copy in two-deck games ("7S2"). */
const CODE = /^([2-9TJQKA])([SHDC])([12]?)$/;

/** "QD" → "Q♦", "TH" → "10♥", "JK1" → "Joker"; anything else as it is. */
export function cardText(code: string): string {
  if (code.startsWith("JK")) return "Joker";
  const m = CODE.exec(code);
  if (!m) return code;
  const [, rank = "", suit = ""] = m;
  return `${RANKS[rank] ?? rank}${SUITS[suit] ?? suit}`;
}

/** "QD" → "queen of diamonds", "TH" → "10 of hearts", "JK1" → "joker"; anything else as it is. */
export function cardWords(code: string): string {
  if (code.startsWith("JK")) return "joker";
  const m = CODE.exec(code);
  if (!m) return code;
  const [, rank = "", suit = ""] = m;
  return `${RANK_WORDS[rank] ?? rank} of ${SUIT_WORDS[suit] ?? suit}`;
}

/** Text as a screen reader should say it: its cards, as cardText writes them, in words ("Seat 1
 * discards Q♦" → "Seat 1 discards queen of diamonds"). */
export function spoken(text: string): string {
  return text.replace(WRITTEN, (_, rank: string, symbol: string) =>
    cardWords(`${rank === "10" ? "T" : rank}${SYMBOL_SUITS[symbol] ?? symbol}`),
  );
}

/** Text as it is shown and, if it names cards by their symbols, as it is said: the shown text
 * hidden from screen readers, the said text shown to nobody else. */
export function readable(text: string): (Node | string)[] {
  const said = spoken(text);
  return said === text ? [text] : shownAndSaid(text, said);
}

/** `shown` (with its tooltip, `title`) hidden from screen readers, and `said` for them alone. */
function shownAndSaid(shown: string, said: string, title = ""): HTMLElement[] {
  const seen = el("span", "", shown, title);
  seen.setAttribute("aria-hidden", "true");
  return [seen, el("span", "sr-only", said)];
}

/** A card named at length in the server's words ("Four of clubs", "Joker 1"), as Gin's knock
 * labels name the card discarded. */
const LONG =
  /\b(Ace|Two|Three|Four|Five|Six|Seven|Eight|Nine|Ten|Jack|Queen|King) of (spades|hearts|diamonds|clubs)\b|\bJoker \d\b/g;
const LONG_RANKS: Record<string, string> = {
  Ace: "A",
  Two: "2",
  Three: "3",
  Four: "4",
  Five: "5",
  Six: "6",
  Seven: "7",
  Eight: "8",
  Nine: "9",
  Ten: "T",
  Jack: "J",
  Queen: "Q",
  King: "K",
};

/** The server's words with their cards written as cards, whether by code or at length: a label
 * from ListLegalMoves ("Discard QD" → "Discard Q♦"; "Discard Four of clubs and knock, melding 3C
 * 3D 3S" → "Discard 4♣ and knock, melding 3♣ 3♦ 3♠", one notation in one label), a settlement's
 * reason ("left in hand: 6D2 5S1" → "left in hand: 6♦ 5♠"). Hanafuda text already names its
 * cards. */
export function prettyLabel(label: string): string {
  return label
    .replace(LONG, (long, rank?: string, suit?: string) =>
      rank && suit
        ? cardText(`${LONG_RANKS[rank] ?? rank}${suit[0]?.toUpperCase() ?? ""}`)
        : "Joker",
    )
    .replace(/\b(JK[12]|[2-9TJQKA][SHDC][12]?)\b/g, (code) => cardText(code));
}

function el(tag: string, className: string, text: string, title = ""): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  if (title) node.title = title;
  return node;
}

/** A playing card as a small tile: "Q♦" shown, "queen of diamonds" said. */
export function cardTile(card: Card | string): HTMLElement {
  const code = typeof card === "string" ? card : card.code;
  const name = typeof card === "string" ? "" : card.name;
  const suit = typeof card === "string" ? (CODE.exec(code)?.[2] ?? "") : card.suit;
  const tile = el("span", `card${RED.has(suit) ? " red" : ""}`, "");
  // The tooltip on what is shown: on the tile, it would name the tile's list item twice over.
  tile.append(...shownAndSaid(cardText(code), cardWords(code), name || code));
  tile.dataset.code = code;
  return tile;
}

/** A Hanafuda card as a tile: its name, its month and kind. */
export function hanafudaTile(card: HanafudaCard): HTMLElement {
  const kind = HanafudaKind[card.kind]?.toLowerCase() ?? "";
  const tile = el("span", `card hanafuda ${kind}`, "");
  const title = `${card.plant}, ${kind}`; // on what is shown, as cardTile's
  tile.append(el("span", "", card.name || card.code, title));
  tile.dataset.code = card.code;
  // "Mar · bright" shown; ", March, bright" said after the name.
  const month = el("small", "month", `${MONTHS[card.month] ?? ""} · ${kind}`, title);
  month.setAttribute("aria-hidden", "true");
  const said = [MONTH_WORDS[card.month] ?? "", kind].filter(Boolean);
  tile.append(month, el("span", "sr-only", said.length ? `, ${said.join(", ")}` : ""));
  return tile;
}

/** A row of tiles: a list, which screen readers count ("list with 10 items"). */
export function cardRow(tiles: HTMLElement[], empty = "none"): HTMLElement {
  const row = el("div", "cards", tiles.length ? "" : empty);
  if (tiles.length) row.setAttribute("role", "list");
  for (const tile of tiles) tile.setAttribute("role", "listitem");
  row.append(...tiles);
  return row;
}
