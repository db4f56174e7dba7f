// Cards as people read them: "Q♦", "10♥", "Joker"; Hanafuda cards by name ("Cherry curtain").
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

/** The server's words with their card codes written as cards: a label from ListLegalMoves
 * ("Discard QD" → "Discard Q♦"), a settlement's reason ("left in hand: 6D2 5S1" → "left in hand:
 * 6♦ 5♠"). Hanafuda text already names its cards. */
export function prettyLabel(label: string): string {
  return label.replace(/\b(JK[12]|[2-9TJQKA][SHDC][12]?)\b/g, (code) => cardText(code));
}

function el(tag: string, className: string, text: string, title = ""): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  node.textContent = text;
  if (title) node.title = title;
  return node;
}

/** A playing card as a small tile. */
export function cardTile(card: Card | string): HTMLElement {
  const code = typeof card === "string" ? card : card.code;
  const name = typeof card === "string" ? "" : card.name;
  const suit = typeof card === "string" ? (CODE.exec(code)?.[2] ?? "") : card.suit;
  const tile = el("span", `card${RED.has(suit) ? " red" : ""}`, cardText(code), name || code);
  tile.dataset.code = code;
  return tile;
}

/** A Hanafuda card as a tile: its name, its month and kind. */
export function hanafudaTile(card: HanafudaCard): HTMLElement {
  const kind = HanafudaKind[card.kind]?.toLowerCase() ?? "";
  const tile = el(
    "span",
    `card hanafuda ${kind}`,
    card.name || card.code,
    `${card.plant}, ${kind}`,
  );
  tile.dataset.code = card.code;
  tile.append(el("small", "month", `${MONTHS[card.month] ?? ""} · ${kind}`));
  return tile;
}

/** A row of tiles. */
export function cardRow(tiles: HTMLElement[], empty = "none"): HTMLElement {
  const row = el("div", "cards", tiles.length ? "" : empty);
  row.append(...tiles);
  return row;
}
