// The committed-seed shuffle of docs/shuffle.md, for a player's own check of the deal: the
// commitment (sha256 of the server seed, shown when the game starts) against the seed revealed
// when it ends, and every deck derived again from the seeds. Browser-safe: WebCrypto's
// crypto.subtle only (Node.js >= 19 has it on its global crypto too), no Node built-in, no
// dependency. Browsers give crypto.subtle to secure contexts only (https, localhost): on a page
// served over plain HTTP from another host, `shuffleCrypto()` is undefined and nothing can be
// checked in the page (the replay's own verifiers still can: docs/shuffle.md).

/** What this module needs of WebCrypto's SubtleCrypto (the browser's and Node.js's both fit). */
export interface ShuffleCrypto {
  digest(algorithm: "SHA-256", data: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer>;
  importKey(
    format: "raw",
    keyData: Uint8Array<ArrayBuffer>,
    algorithm: { name: "HMAC"; hash: "SHA-256" },
    extractable: false,
    keyUsages: ["sign"],
  ): Promise<CryptoKeyLike>;
  sign(algorithm: "HMAC", key: CryptoKeyLike, data: Uint8Array<ArrayBuffer>): Promise<ArrayBuffer>;
}

/** An imported key, opaque here. */
export type CryptoKeyLike = object;

/** The seeds a game's decks come from: the server's (`SeedRevealed.serverSeed`, the game's last
 * event, hex) and the clients' (its first event's `clientSeeds`, in order: Hoola's `GameStarted`,
 * Koi-Koi's `MatchStarted`, Gin's `GinMatchStarted`, Rummy's `RummyStarted`). */
export interface ShuffleSeeds {
  readonly serverSeed: string;
  readonly clientSeeds: readonly string[];
}

/** The derivation's domain label (docs/shuffle.md, "Derivation"): version 1. */
export const SHUFFLE_LABEL = "croupier/shuffle/v1";
/** The purposes of docs/shuffle.md's shuffles ("Derivation"), each a shuffle of its own: a
 * round's deal (Gin's hand's); the cards the seats turn to choose the first dealer (round 1);
 * Hoola's stock with the sitters-out's cards; and, from `reshufflePurpose` and `redealPurpose`,
 * the N-th rebuilding of a Hoola or Rummy stock from the discards and the N-th redeal of a
 * Koi-Koi round. */
export const DEAL = "deal";
export const FIRST_DEALER = "first-dealer";
export const SIT_OUT = "sit-out";
const RESHUFFLE_PREFIX = "reshuffle-";
const REDEAL_PREFIX = "redeal-";
export type ShufflePurpose =
  | typeof DEAL
  | typeof FIRST_DEALER
  | typeof SIT_OUT
  | `${typeof RESHUFFLE_PREFIX}${number}`
  | `${typeof REDEAL_PREFIX}${number}`;

/** "N-th" counts from 1 (docs/shuffle.md): a purpose with 0 or a fraction in it is no shuffle
 * the server makes, and its deck would match nothing. */
function nth(n: number): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`the N-th counts from 1, not ${n}`);
  return n;
}

/** `reshuffle-N`: the N-th rebuilding of a round's stock from its discards (Hoola, Rummy). */
export function reshufflePurpose(n: number): `${typeof RESHUFFLE_PREFIX}${number}` {
  return `${RESHUFFLE_PREFIX}${nth(n)}`;
}

/** `redeal-N`: the N-th deal of a Koi-Koi round again (its field showed four of a month). */
export function redealPurpose(n: number): `${typeof REDEAL_PREFIX}${number}` {
  return `${REDEAL_PREFIX}${nth(n)}`;
}

const U32_BYTES = 4;
const SHA256_BYTES = 32;
const WORDS_PER_BLOCK = SHA256_BYTES / U32_BYTES;
const TWO_TO_32 = 2 ** 32;
const HEX = /^(?:[0-9a-f]{2})*$/i;
const HEX_RADIX = 16;
const BYTE_HEX_DIGITS = 2;

/** The standard deck's suits and ranks, in the canonical order (spades, hearts, diamonds, clubs;
 * ace to king). */
export const SUITS = ["S", "H", "D", "C"] as const;
export const RANKS = ["A", "2", "3", "4", "5", "6", "7", "8", "9", "T", "J", "Q", "K"] as const;
/** The Hanafuda deck's canonical order: months 1 to 12, each bright, animal, ribbon, then chaff
 * (docs/rules/koikoi.md §2.1). */
const HANAFUDA =
  "1B 1R 1C1 1C2 2A 2R 2C1 2C2 3B 3R 3C1 3C2 4A 4R 4C1 4C2 5A 5R 5C1 5C2 6A 6R 6C1 6C2 " +
  "7A 7R 7C1 7C2 8B 8A 8C1 8C2 9A 9R 9C1 9C2 10A 10R 10C1 10C2 11B 11A 11R 11C1 12B 12C1 12C2 12C3";
/** Rummy's two copies of the standard deck, then its jokers. */
const RUMMY_COPIES = 2;
const RUMMY_JOKERS = 4;

/** The standard deck (Hoola, Gin, and every first dealer's draw): `AS 2S … KC`, then `JK1`… */
export function standardDeck(jokers = 0): string[] {
  const cards = SUITS.flatMap((suit) => RANKS.map((rank) => rank + suit));
  for (let j = 1; j <= jokers; j++) cards.push(`JK${j}`);
  return cards;
}

/** Koi-Koi's 48 cards in their canonical order. */
export function hanafudaDeck(): string[] {
  return HANAFUDA.split(" ");
}

/** Rummy's 108 cards: copy 1 (`AS1 … KC1`), copy 2, then `JK1 … JK4`. */
export function rummyDeck(): string[] {
  const cards: string[] = [];
  for (let copy = 1; copy <= RUMMY_COPIES; copy++)
    for (const card of standardDeck()) cards.push(`${card}${copy}`);
  for (let j = 1; j <= RUMMY_JOKERS; j++) cards.push(`JK${j}`);
  return cards;
}

/** WebCrypto's SubtleCrypto where the context has it (a browser's secure context, Node.js). */
export function shuffleCrypto(): ShuffleCrypto | undefined {
  const subtle = (globalThis as { crypto?: { subtle?: unknown } }).crypto?.subtle;
  return subtle ? (subtle as ShuffleCrypto) : undefined;
}

function needCrypto(given: ShuffleCrypto | undefined): ShuffleCrypto {
  const subtle = given ?? shuffleCrypto();
  if (!subtle)
    throw new Error(
      "WebCrypto (crypto.subtle) is not available here: browsers offer it on https and localhost pages only",
    );
  return subtle;
}

/** Hex to bytes; throws on anything but an even number of hex digits. */
export function hexToBytes(hex: string): Uint8Array<ArrayBuffer> {
  if (!HEX.test(hex)) throw new Error("not hex: an even number of 0-9, a-f expected");
  const bytes = new Uint8Array(hex.length / BYTE_HEX_DIGITS);
  for (let i = 0; i < bytes.length; i++)
    bytes[i] = parseInt(hex.slice(BYTE_HEX_DIGITS * i, BYTE_HEX_DIGITS * (i + 1)), HEX_RADIX);
  return bytes;
}

export function bytesToHex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(HEX_RADIX).padStart(BYTE_HEX_DIGITS, "0")).join("");
}

function concat(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function u32be(value: number): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(U32_BYTES);
  new DataView(out.buffer).setUint32(0, value);
  return out;
}

/** The commitment a server seed makes: hex(sha256(seed)), the seed given in hex. */
export async function commitmentOf(serverSeed: string, subtle?: ShuffleCrypto): Promise<string> {
  const digest = await needCrypto(subtle).digest("SHA-256", hexToBytes(serverSeed));
  return bytesToHex(new Uint8Array(digest));
}

/** Whether a revealed server seed is the one committed to (`sha256(seed) == commitment`); false
 * for a seed that is not hex. */
export async function seedMatchesCommitment(
  serverSeed: string,
  commitment: string,
  subtle?: ShuffleCrypto,
): Promise<boolean> {
  if (!HEX.test(serverSeed)) return false;
  return (await commitmentOf(serverSeed, subtle)) === commitment.toLowerCase();
}

/** sha256 of the client seeds, each as u32be(its UTF-8 length) ‖ its UTF-8 bytes, in order. */
async function clientDigest(
  subtle: ShuffleCrypto,
  seeds: readonly string[],
): Promise<Uint8Array<ArrayBuffer>> {
  const encoder = new TextEncoder();
  const parts = seeds.flatMap((seed) => {
    const bytes = encoder.encode(seed);
    return [u32be(bytes.length), bytes];
  });
  return new Uint8Array(await subtle.digest("SHA-256", concat(parts)));
}

/**
 * `cards` shuffled as docs/shuffle.md derives it for `round` and `purpose` (`DEAL`,
 * `FIRST_DEALER`, `SIT_OUT`, `reshufflePurpose(n)`, `redealPurpose(n)`): the key is the server
 * seed, each HMAC-SHA256 block a counter's, read as big-endian u32 words; an unbiased index per
 * step of a Fisher–Yates shuffle from the end. A new array; `cards` is left as it is.
 */
export async function shuffleCards<T>(
  cards: readonly T[],
  seeds: ShuffleSeeds,
  round: number,
  purpose: string,
  subtle?: ShuffleCrypto,
): Promise<T[]> {
  const crypto = needCrypto(subtle);
  const key = await crypto.importKey(
    "raw",
    hexToBytes(seeds.serverSeed),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const encoder = new TextEncoder();
  const prefix = concat([
    encoder.encode(SHUFFLE_LABEL),
    new Uint8Array([0]),
    encoder.encode(purpose),
    new Uint8Array([0]),
    u32be(round),
    await clientDigest(crypto, seeds.clientSeeds),
  ]);
  let counter = 0;
  let block: DataView | undefined;
  let word = WORDS_PER_BLOCK;
  const nextWord = async (): Promise<number> => {
    if (!block || word === WORDS_PER_BLOCK) {
      block = new DataView(await crypto.sign("HMAC", key, concat([prefix, u32be(counter++)])));
      word = 0;
    }
    return block.getUint32(U32_BYTES * word++);
  };
  const index = async (n: number): Promise<number> => {
    const limit = TWO_TO_32 - (TWO_TO_32 % n);
    for (;;) {
      const w = await nextWord();
      if (w < limit) return w % n;
    }
  };
  const out = [...cards];
  for (let i = out.length - 1; i >= 1; i--) {
    const j = await index(i + 1);
    [out[i], out[j]] = [out[j] as T, out[i] as T];
  }
  return out;
}
