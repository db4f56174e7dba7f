// The studio's tokens minted here are the server's own (golden: minted by croupier.app.tokens,
// which tests/test_tokens_golden.py holds to the same file), and a real server takes them.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { keyId, mintPlayerToken, mintStudioToken, parseSecret } from "../src/index.js";

interface Golden {
  readonly expiresAtS: number;
  readonly cases: readonly {
    readonly secret: string;
    readonly keyId: string;
    readonly studio: string;
    readonly player: string;
    readonly playerToken: string;
  }[];
}

// dist/test/ when compiled: the JSON stays beside the sources.
const GOLDEN: Golden = JSON.parse(
  readFileSync(
    join(dirname(fileURLToPath(import.meta.url)), "..", "..", "test", "tokens.golden.json"),
    "utf8",
  ),
);

test("tokens are minted as the server mints them", () => {
  assert.ok(GOLDEN.cases.length >= 2);
  for (const c of GOLDEN.cases) {
    assert.equal(keyId(parseSecret(c.secret)), c.keyId);
    assert.equal(mintStudioToken(c.secret, GOLDEN.expiresAtS), c.studio);
    assert.equal(mintStudioToken(parseSecret(c.secret), GOLDEN.expiresAtS), c.studio);
    assert.equal(mintPlayerToken(c.secret, c.player, GOLDEN.expiresAtS), c.playerToken);
  }
});

test("a secret the server would refuse is refused, saying why", () => {
  assert.throws(() => parseSecret("00112233"), /no hex: or base64: prefix/);
  assert.throws(() => parseSecret("hex:0011"), /only 2 bytes/);
  assert.throws(() => parseSecret("hex:zz"), /not valid hex/);
  assert.throws(() => parseSecret("base64:***"), /not valid base64/);
  const secret = GOLDEN.cases[0]!.secret;
  assert.throws(() => mintStudioToken(secret, 1.5), /whole seconds/);
  assert.throws(() => mintPlayerToken(secret, "", GOLDEN.expiresAtS), /names a player/);
});
