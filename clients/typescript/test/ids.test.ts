// Command ids where crypto.randomUUID is missing: a page served over plain HTTP from anywhere but
// localhost (a LAN address, a staging host) is no secure context, and its crypto has
// getRandomValues only. randomId makes a UUID v4 from those; submit sends one.
import assert from "node:assert/strict";
import { webcrypto } from "node:crypto";
import { test } from "node:test";
import { randomId, submit, type GameClient, type SubmitCommandResponse } from "../src/web.js";
import { uuidV4 } from "../src/ids.js";

/** A UUID v4: version nibble 4, variant bits 10 (8, 9, a or b). */
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const MANY = 1000;

/** An insecure context's crypto: random values, no randomUUID. */
const insecure = {
  getRandomValues: <T extends Uint8Array>(array: T): T => webcrypto.getRandomValues(array),
};

test("without randomUUID, ids are UUID v4 made from getRandomValues, all different", () => {
  const ids = Array.from({ length: MANY }, () => randomId(insecure));
  for (const id of ids) {
    assert.match(id, UUID_V4);
  }
  assert.equal(new Set(ids).size, MANY);
});

test("randomUUID is used where the context has it", () => {
  assert.equal(randomId({ ...insecure, randomUUID: () => "from-randomUUID" }), "from-randomUUID");
  assert.match(randomId(), UUID_V4); // Node.js's global crypto
});

test("the version and variant bits are set whatever the random bytes", () => {
  assert.equal(uuidV4(new Uint8Array(16).fill(0xff)), "ffffffff-ffff-4fff-bfff-ffffffffffff");
  assert.equal(uuidV4(new Uint8Array(16)), "00000000-0000-4000-8000-000000000000");
  assert.throws(() => uuidV4(new Uint8Array(15)), RangeError);
});

test("submit makes its command id without randomUUID (a page on plain HTTP)", async (t) => {
  const real = Object.getOwnPropertyDescriptor(globalThis, "crypto");
  assert.ok(real?.configurable, "Node.js's global crypto can be replaced for the test");
  Object.defineProperty(globalThis, "crypto", { value: insecure, configurable: true });
  t.after(() => Object.defineProperty(globalThis, "crypto", real));
  const sent: string[] = [];
  const client = {
    async submitCommand(request: { commandId: string }): Promise<SubmitCommandResponse> {
      sent.push(request.commandId);
      return { version: 2n } as SubmitCommandResponse;
    },
  } as unknown as GameClient;
  await submit(client, { gameId: "g", expectedVersion: 1n, command: {} });
  assert.equal(sent.length, 1);
  assert.match(sent[0]!, UUID_V4);
});
