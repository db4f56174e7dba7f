// Random ids for commands and create requests: UUID v4, wherever the code runs. Browsers expose
// crypto.randomUUID in secure contexts only (https, localhost): a page served over plain HTTP from
// a LAN address or a staging host has crypto.getRandomValues but no randomUUID. Both are on the
// global crypto of Node.js >= 19 too, so nothing here imports a Node built-in.

/** What randomId needs of a Web Crypto object: randomUUID where the context offers it. */
export interface RandomSource {
  getRandomValues<T extends Uint8Array>(array: T): T;
  randomUUID?: () => string;
}

const UUID_BYTES = 16;
/** Byte 6's high nibble is the version (4: random); byte 8's two high bits the variant (10). */
const VERSION_BYTE = 6;
const VERSION_4 = 0x40;
const VARIANT_BYTE = 8;
const VARIANT_RFC_4122 = 0x80;
/** Where the hyphens go in the 32 hex digits: 8-4-4-4-12. */
const GROUPS = [8, 4, 4, 4, 12];

/** Why randomId cannot make an id: no Web Crypto at all, as in React Native (Hermes) before a
 * polyfill of crypto.getRandomValues is loaded. */
export const NO_RANDOM_SOURCE =
  "randomId: no crypto.getRandomValues here (React Native has no global crypto): load a " +
  "polyfill first (react-native-get-random-values), or pass a RandomSource";

/** A random UUID v4 ("3f1c…-…"): `source.randomUUID()` when there is one, else one made from
 * `source.getRandomValues` (RFC 9562, section 5.4), which insecure contexts have too. Throws a
 * TypeError (NO_RANDOM_SOURCE) where there is neither. */
export function randomId(
  source: RandomSource | undefined = globalThis.crypto as RandomSource | undefined,
): string {
  if (typeof source?.randomUUID === "function") {
    return source.randomUUID();
  }
  if (typeof source?.getRandomValues !== "function") {
    throw new TypeError(NO_RANDOM_SOURCE);
  }
  return uuidV4(source.getRandomValues(new Uint8Array(UUID_BYTES)));
}

/** 16 random bytes as a UUID v4: the version and variant bits set, the rest kept. */
export function uuidV4(random: Uint8Array): string {
  if (random.length !== UUID_BYTES) {
    throw new RangeError(`a UUID takes ${UUID_BYTES} bytes, not ${random.length}`);
  }
  const bytes = Uint8Array.from(random);
  bytes[VERSION_BYTE] = (bytes[VERSION_BYTE]! & 0x0f) | VERSION_4;
  bytes[VARIANT_BYTE] = (bytes[VARIANT_BYTE]! & 0x3f) | VARIANT_RFC_4122;
  const hex = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const parts: string[] = [];
  let at = 0;
  for (const length of GROUPS) {
    parts.push(hex.slice(at, at + length));
    at += length;
  }
  return parts.join("-");
}
