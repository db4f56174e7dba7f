// The example as a newcomer runs it: `node play.mjs --address …` against a real `croupier serve`
// (started here on a free port, as the client package's tests do), with the studio token in
// CROUPIER_STUDIO_KEY. Every game kind is played to its settlement.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startCroupier } from "@croupier/client/testing";

const run = promisify(execFile);
const PLAY = fileURLToPath(new URL("../play.mjs", import.meta.url));
const KINDS = ["hoola", "koikoi", "gin", "rummy"];
// A whole game of each kind on a loaded machine (the test itself asserts no speed).
const RUN_TIMEOUT_MS = 240_000;

let server;

before(async () => {
  server = await startCroupier();
});

after(async () => {
  await server?.stop();
});

test("play.mjs plays every kind of game to its settlement", async (t) => {
  const { stdout } = await run(process.execPath, [PLAY, "--address", server.address], {
    env: { ...process.env, CROUPIER_STUDIO_KEY: server.studioToken },
    timeout: RUN_TIMEOUT_MS,
  });
  for (const line of stdout.trimEnd().split("\n")) {
    t.diagnostic(line);
  }
  for (const kind of KINDS) {
    const over = new RegExp(`^${kind}: game \\S+ over after (\\d+) moves`, "m").exec(stdout);
    assert.ok(over, `${kind} was played to its end:\n${stdout}`);
    assert.ok(Number(over[1]) > 0);
  }
  const nets = [...stdout.matchAll(/^ {2}net per seat: (.*)$/gm)].map((m) =>
    m[1].split(" ").map(BigInt),
  );
  assert.equal(nets.length, KINDS.length, "one settlement per game");
  for (const net of nets) {
    assert.equal(
      net.reduce((a, b) => a + b, 0n),
      0n,
      `a settlement moves stakes between seats: ${net}`,
    );
  }
});
