// The studio's credentials, minted as the server checks them (docs/credentials.md, "Formats"),
// for a studio's backend in Node.js: the studio token that CreateGame and EndGame take, and a
// player token that recalls a player's games. Each is an HMAC-SHA256 under the studio's secret
// (CROUPIER_STUDIO_SECRET), named by its key id. Node.js only (node:crypto): a browser never holds
// the studio's secret.
import { createHash, createHmac } from "node:crypto";

/** The fewest bytes a secret may have (the server refuses shorter ones). */
export const MIN_SECRET_BYTES = 32;
/** How many hex digits of its digest name a key. */
const KID_HEX = 8;

/** A secret as the server's settings write it, `hex:…` or `base64:…` (standard or URL-safe
 * alphabet, padding optional), of at least MIN_SECRET_BYTES bytes; throws an Error saying what
 * is wrong otherwise. */
export function parseSecret(text: string): Uint8Array {
  const trimmed = text.trim();
  const colon = trimmed.indexOf(":");
  const scheme = colon < 0 ? "" : trimmed.slice(0, colon).toLowerCase();
  const encoded = colon < 0 ? "" : trimmed.slice(colon + 1);
  const need = `needs hex:… or base64:… of at least ${MIN_SECRET_BYTES} bytes`;
  let value: Buffer;
  if (scheme === "hex") {
    if (!/^(?:[0-9a-fA-F]{2})*$/.test(encoded)) throw new Error(`not valid hex; ${need}`);
    value = Buffer.from(encoded, "hex");
  } else if (scheme === "base64") {
    const standard = encoded.replace(/-/g, "+").replace(/_/g, "/");
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(standard)) throw new Error(`not valid base64; ${need}`);
    value = Buffer.from(standard, "base64");
  } else {
    throw new Error(`no hex: or base64: prefix; ${need}`);
  }
  if (value.length < MIN_SECRET_BYTES) throw new Error(`only ${value.length} bytes; ${need}`);
  return new Uint8Array(value);
}

/** A key's public name: the first 8 hex digits of sha256("croupier key id" ‖ 0x00 ‖ key). */
export function keyId(secret: Uint8Array): string {
  const digest = createHash("sha256").update("croupier key id\0").update(secret).digest("hex");
  return digest.slice(0, KID_HEX);
}

function mac(secret: Uint8Array, text: string): string {
  return createHmac("sha256", secret).update(text, "utf8").digest("hex");
}

function secretOf(secret: Uint8Array | string): Uint8Array {
  return typeof secret === "string" ? parseSecret(secret) : secret;
}

function seconds(expiresAtS: number): string {
  if (!Number.isSafeInteger(expiresAtS) || expiresAtS <= 0)
    throw new Error(`expiresAtS must be whole seconds since the epoch, not ${expiresAtS}`);
  return String(expiresAtS);
}

/** The studio's token, good until `expiresAtS` (seconds since the Unix epoch; refused from that
 * second on), signed with `secret` (its bytes, or its setting's text, `hex:…`/`base64:…`). */
export function mintStudioToken(secret: Uint8Array | string, expiresAtS: number): string {
  const key = secretOf(secret);
  const kid = keyId(key);
  const expires = seconds(expiresAtS);
  return `studio.v1.${kid}.${expires}.${mac(key, `croupier studio v1:${kid}:${expires}`)}`;
}

/** A token that recalls `player`'s games (ListRecentGames, GetRecentGame) until `expiresAtS`,
 * for that player's client. */
export function mintPlayerToken(
  secret: Uint8Array | string,
  player: string,
  expiresAtS: number,
): string {
  if (!player) throw new Error("a player token names a player");
  const key = secretOf(secret);
  const kid = keyId(key);
  const encoded = Buffer.from(player, "utf8").toString("base64url"); // unpadded
  const expires = seconds(expiresAtS);
  const signed = `croupier player v1:${kid}:${encoded}:${expires}`;
  return `player.v1.${kid}.${encoded}.${expires}.${mac(key, signed)}`;
}
