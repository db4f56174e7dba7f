// Seat links that the page cannot play, and a connection that breaks, in headless Chromium: a
// link the server will always refuse (a token it does not accept, a token for another game: a
// server that restarted with new keys, a mistyped link) must say so in plain words and ask once, not every second; a stream that
// breaks on the way (the network) must be tried again, less and less often, and pick up when the
// network is back. Prints one JSON line of what it saw; exits 1 on any failure. Run by
// tests/web/test_web.py (pytest), which starts the server:
//
//   node test/links.mjs --url http://127.0.0.1:8080
import { parseArgs } from "node:util";
import { launch, methodOf } from "./chromium.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
  },
});
/** How long a refused link is watched for more attempts: the old page tried every second. */
const WATCH_MS = 4000;
/** How long the page may take to say something, or to pick up again. */
const STEP_MS = 20_000;
/** Attempts expected while the network is down, within BROKEN_MS: the first, and retries after
 * about a second, then about two (RECONNECT in src/main.ts: doubling, with jitter). */
const BROKEN_MS = 4000;
const RETRIES_AT_LEAST = 2;
const STREAM = "**/croupier.v1.GameService/StreamEvents";
const DEAD = "This link no longer works";

/** A lobby game with one person (a bot at the other seat): its id and the person's token. */
async function lobbyGame() {
  const answer = await fetch(new URL("/lobby/games", args.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ kind: "gin", preset: "single-hand", seats: 2, humans: 1 }),
  });
  if (answer.status !== 201) throw new Error(`the lobby answered ${answer.status}`);
  const made = await answer.json();
  return { gameId: made.game_id, token: made.seats[0].token };
}

function seatLink(gameId, token) {
  const fragment = new URLSearchParams({ game: gameId, seat: "0", kind: "gin", token });
  return new URL(`/#${fragment}`, args.url).href;
}

/** Opens `link` in a new tab; the tab and a count of its StreamEvents calls. */
async function open(context, link, errors) {
  const page = await context.newPage();
  const calls = { streams: 0 };
  page.on("pageerror", (error) => errors.push(`${link}: ${error.message}`));
  page.on("request", (request) => {
    if (methodOf(request) === "StreamEvents") calls.streams += 1;
  });
  return { page, calls, opened: page.goto(link) };
}

/** A link the server refuses: the page says so once, with the code, and stops asking. */
async function refusedLink(context, name, link, errors) {
  const { page, calls, opened } = await open(context, link, errors);
  await opened;
  await page.waitForSelector("#app[data-dead=true]", { timeout: STEP_MS });
  await page.waitForTimeout(WATCH_MS);
  const status = (await page.textContent("p.status")) ?? "";
  const code = (await page.textContent("p.status small.code")) ?? "";
  if (!status.startsWith(DEAD)) throw new Error(`${name}: the status says "${status}"`);
  if (calls.streams !== 1)
    throw new Error(`${name}: ${calls.streams} StreamEvents calls in ${WATCH_MS} ms, not one`);
  await page.close();
  return { status, code, streams: calls.streams };
}

/** A stream the network breaks: the page says it tries again, does, and picks up once it can. */
async function brokenNetwork(context, link, errors) {
  const { page, calls, opened } = await open(context, link, errors);
  await page.route(STREAM, (route) => route.abort("connectionreset"));
  await opened;
  await page.waitForFunction(
    (text) => document.querySelector("p.status")?.textContent?.startsWith(text),
    "The connection to the server is lost",
    { timeout: STEP_MS },
  );
  await page.waitForTimeout(BROKEN_MS);
  const broken = (await page.textContent("p.status")) ?? "";
  const tries = calls.streams;
  if (tries < 1 + RETRIES_AT_LEAST)
    throw new Error(`${tries} StreamEvents calls while the network was down, not retried`);
  if (await page.$("#app[data-dead=true]")) throw new Error("a broken network killed the link");
  await page.unroute(STREAM);
  // Back: the next attempt opens the stream, and the page shows the game.
  await page.waitForSelector("section.hand .cards", { timeout: STEP_MS });
  const back = (await page.textContent("p.status")) ?? "";
  if (back.includes("connection")) throw new Error(`back, the status says "${back}"`);
  await page.close();
  return { broken, back, tries };
}

async function main() {
  const mine = await lobbyGame();
  const other = await lobbyGame();
  const { context, close } = await launch(args.chromium);
  const errors = [];
  const report = {};
  try {
    report.badToken = await refusedLink(
      context,
      "a token the server does not accept",
      seatLink(mine.gameId, "not-a-token"),
      errors,
    );
    report.otherGame = await refusedLink(
      context,
      "a token for another game",
      seatLink(other.gameId, mine.token),
      errors,
    );
    report.network = await brokenNetwork(context, seatLink(mine.gameId, mine.token), errors);
    if (errors.length) throw new Error(`the page reported errors:\n${errors.join("\n")}`);
  } finally {
    await close();
  }
  console.log(JSON.stringify(report));
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
