// A React Native app (Metro asserts the conditions require, import and react-native; its JS
// engine, Hermes, has no node:http2 and no global crypto) gets the browser entry, and an id it
// cannot make is refused with a message that says what to load, not a TypeError about
// `randomUUID` of undefined thrown from deep inside submit().
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { NO_RANDOM_SOURCE, randomId, submit, type GameClient } from "../src/web.js";

/** The package's folder (dist/test/ → ../../), where "@croupier/client" resolves to itself. */
const PACKAGE = fileURLToPath(new URL("../../", import.meta.url));

/** What a plain import of the package gives under `conditions`: its export names' types. */
function entry(conditions: string[]): Record<string, string> {
  const script =
    'const m = await import("@croupier/client");' +
    "console.log(JSON.stringify({ connect: typeof m.connect, playSeat: typeof m.playSeat, " +
    "submit: typeof m.submit, followGame: typeof m.followGame }));";
  const flags = conditions.map((c) => `--conditions=${c}`);
  const out = execFileSync(process.execPath, [...flags, "--input-type=module", "-e", script], {
    cwd: PACKAGE,
    encoding: "utf8",
  });
  return JSON.parse(out) as Record<string, string>;
}

test("React Native's Metro resolves the package to its browser entry, never connect-node's", () => {
  assert.deepEqual(entry(["react-native"]), {
    connect: "undefined",
    playSeat: "undefined",
    submit: "function",
    followGame: "function",
  });
  assert.equal(entry([]).connect, "function"); // Node.js keeps connect() and playSeat
});

test("without any crypto, randomId and submit say what to load", async (t) => {
  const real = Object.getOwnPropertyDescriptor(globalThis, "crypto");
  assert.ok(real?.configurable, "Node.js's global crypto can be removed for the test");
  Object.defineProperty(globalThis, "crypto", { value: undefined, configurable: true });
  t.after(() => Object.defineProperty(globalThis, "crypto", real));
  assert.throws(() => randomId(), { name: "TypeError", message: NO_RANDOM_SOURCE });
  assert.match(NO_RANDOM_SOURCE, /react-native-get-random-values/);
  const client = { submitCommand: async () => ({ version: 1n }) } as unknown as GameClient;
  await assert.rejects(submit(client, { gameId: "g", expectedVersion: 1n, command: {} }), {
    message: NO_RANDOM_SOURCE,
  });
  // An id given is sent as it is: nothing random is needed.
  const answer = await submit(client, {
    gameId: "g",
    expectedVersion: 1n,
    command: {},
    commandId: "c",
  });
  assert.equal(answer.version, 1n);
});
