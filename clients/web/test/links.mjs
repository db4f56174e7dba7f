// Seat links that the page cannot play, and a connection that breaks or stalls, in headless
// Chromium: a link the server will always refuse (a token it does not accept, a token for another
// game: a server that restarted with new keys, a mistyped link) must say so in plain words and ask
// once, not every second; a stream that breaks on the way (the network) must be tried again, less
// and less often, and pick up when the network is back; a stream that stalls without closing (a
// proxy that stops forwarding and keeps the socket open) must be noticed by its silence (no
// heartbeat) and reopened, and catch up with a move made meanwhile. A link whose `seat=` is not its
// token's seat (or that has none) must be the token's seat, as the server says; a browser whose
// clock is off must count the turn down on the server's time. A busy server, slow to answer the
// first stream or a move, must be said so: connecting, sending the move. Prints one JSON line of
// what it saw; exits 1 on any failure. Run by tests/web/test_web.py (pytest), which starts the
// server:
//
//   node test/links.mjs --url http://127.0.0.1:8080 [--case links|stall|away|seat|skew|slow]
//
// `--case links`: the refused links and the broken network; `--case stall`: the stalled
// connection; `--case away`: a seat gone away; `--case seat`: the seat a link names or not;
// `--case skew`: the turn clock in browsers 40 s slow and 40 s fast; `--case slow`: a slow first
// stream and slow moves; `--case hurry`: a seat's own time running short, seen and said once;
// `--case watch`: a link with a player's token (`--watch-token`), which watches as a spectator;
// `--case online`: the browser offline, then back online, while the stream waits to reconnect;
// all without `--case` (`watch` only with `--watch-token`).
import { randomUUID } from "node:crypto";
import { connect, createServer } from "node:net";
import { parseArgs } from "node:util";
import { launch, methodOf } from "./chromium.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
    case: { type: "string", default: "" },
    "watch-token": { type: "string", default: "" },
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
const SUBMIT = "**/croupier.v1.GameService/SubmitCommand";
const GET_VIEW = "**/croupier.v1.GameService/GetView";
const DEAD = "This link no longer works";
/** What the page says until its first state, and while a move is on its way (main.ts). */
const CONNECTING = "Connecting…";
const SENDING = "Sending your move…";
/** What a seat's tab says when it has moves to make (main.ts, waitingFor). */
const YOUR_MOVE = "Your move.";
const UNREACHABLE = "Not played: the server could not be reached";
/** The tag of an error the service never answered (main.ts, codeTag): not connect-web's UNKNOWN. */
const NO_CONNECTION = "NO_CONNECTION";
/** What the tab of a seat gone away says (main.ts, waitingFor). */
const AWAY = "You are away";
const LOST = "The connection to the server is lost";
/** The heartbeat the stalled page asks for (`?heartbeat_s=`, src/main.ts; 15 s without it): its
 * watchdog gives a silent stream up after 2.5 of them, 5 s rather than 37.5 s. */
const STALL_HEARTBEAT_S = 2;
/** How long the page is watched in a quiet game before the stall: longer than its watchdog's
 * 5 s, so that only the heartbeats can keep its first stream open all along. */
const QUIET_MS = 7000;

/** How far off the browsers' clocks are in `--case skew`, and how old the game's events are when
 * its pages open: older than the turn clock's tolerance, so that a page taking its last event's
 * time for the server's now would be seen. */
const SKEWS_MS = [-40_000, 40_000];
const EVENTS_AGE_MS = 5000;
/** How much more time than the server's the turn clock may show: it shows whole seconds, rounded
 * up, redrawn every half second, and until a fresh event the page reads the server's clock off
 * HTTP Date headers, rounded down to the second. Less, it must not show (but for this script's own
 * delay in reading it). */
const CLOCK_SLACK_S = 3;

/** What the page says when the seat's own time runs short, and when the browser is offline
 * (main.ts, HURRY_TEXT and OFFLINE_TEXT). */
const HURRY = "Your time is running out:";
const OFFLINE = "No network:";
/** The turn of `--case hurry`: the page warns from half of it (render.ts, timeIsShort), 4 s. */
const HURRY_TURN_MS = 8000;
/** `--case online`: the reconnection's wait the page must be in when the network comes back (the
 * page said "trying again in N s", N at least this), and how soon after it must show the game. */
const ONLINE_WAIT_S = 6;
const ONLINE_BACK_MS = 2500;

/** A promise that `open()` resolves: a request held until the script has looked at the page. */
function gate() {
  let open;
  const promise = new Promise((resolve) => (open = resolve));
  return { promise, open };
}

/** `promise`, or a failure after STEP_MS: a request the page never makes must fail the script,
 * not hang it. */
function within(promise, what) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${STEP_MS} ms`)), STEP_MS);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A lobby game of Gin with `humans` people (a bot at the other seat, if one): its id and the
 * people's tokens, by seat. */
async function lobbyGame(humans = 1, overrides = undefined) {
  const answer = await fetch(new URL("/lobby/games", args.url), {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ kind: "gin", preset: "single-hand", seats: 2, humans, overrides }),
  });
  if (answer.status !== 201) throw new Error(`the lobby answered ${answer.status}`);
  const made = await answer.json();
  const tokens = made.seats.filter((s) => s.human).map((s) => s.token);
  return { gameId: made.game_id, token: tokens[0], tokens };
}

/** A seat's link on the page at `base` (the server, or a proxy in front of it), with `search`
 * (`?heartbeat_s=2`) before the fragment. */
function seatLink(gameId, token, { seat = 0, base = args.url, search = "" } = {}) {
  const fragment = new URLSearchParams({ game: gameId, seat: String(seat), kind: "gin", token });
  return new URL(`/${search}#${fragment}`, base).href;
}

/** A call to the service over Connect's JSON (as curl would), as a seat: its answer, parsed. */
async function call(method, token, body) {
  const answer = await fetch(new URL(`/croupier.v1.GameService/${method}`, args.url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(body),
  });
  const parsed = await answer.json();
  if (!answer.ok) throw new Error(`${method} answered ${answer.status}: ${JSON.stringify(parsed)}`);
  return parsed;
}

/** An HTTP/1.1 request's first line: the path it calls. */
const REQUEST_LINE = /^[A-Z]+ (\S+) HTTP\/1\.[01]\r\n/;

/**
 * A TCP proxy in front of `target` (the server's URL) that can stall, as the reviewer's did:
 * `stall()` stops forwarding, both ways, on the connections that carry a StreamEvents stream, and
 * keeps them open (no FIN, no reset: the browser is told nothing, as behind a proxy or a network
 * that hangs). Every other connection, and every one opened later, is forwarded as before: were
 * the browser's idle keep-alive connections stalled too, the page would find a live one only after
 * a watchdog's wait on each (slower, not different). `stall()` answers how many it stalled.
 */
async function stallingProxy(target) {
  const to = new URL(target);
  const pairs = new Set();
  const server = createServer((client) => {
    const upstream = connect(Number(to.port), to.hostname);
    const pair = { client, upstream, stream: false, stalled: false };
    pairs.add(pair);
    client.on("data", (chunk) => {
      const called = REQUEST_LINE.exec(chunk.toString("latin1"));
      if (called) pair.stream = called[1].endsWith("/StreamEvents"); // one request at a time
      if (!pair.stalled) upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!pair.stalled) client.write(chunk);
    });
    // The browser's close is passed on (the page gave the stream up); a stalled connection's
    // server end is not, as a hung network would not.
    client.on("close", () => {
      upstream.destroy();
      pairs.delete(pair);
    });
    upstream.on("close", () => {
      if (!pair.stalled) client.destroy();
    });
    client.on("error", () => {});
    upstream.on("error", () => {});
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    stall() {
      const streams = [...pairs].filter((pair) => pair.stream);
      for (const pair of streams) pair.stalled = true;
      return streams.length;
    },
    close() {
      for (const { client, upstream } of pairs) {
        client.destroy();
        upstream.destroy();
      }
      server.close();
    },
  };
}

/** Opens `link` in a new tab; the tab and a count of its StreamEvents calls. `prepare` is done to
 * the tab before it goes to the link (a route that must catch the page's first request: set
 * after the navigation began, a loaded machine let the first stream through before it). */
async function open(context, link, errors, prepare = async (_page) => {}) {
  const page = await context.newPage();
  const calls = { streams: 0 };
  page.on("pageerror", (error) => errors.push(`${link}: ${error.message}`));
  page.on("request", (request) => {
    if (methodOf(request) === "StreamEvents") calls.streams += 1;
  });
  await prepare(page);
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
  const { page, calls, opened } = await open(context, link, errors, (tab) =>
    tab.route(STREAM, (route) => route.abort("connectionreset")),
  );
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

/**
 * A stream whose connection stalls without closing: in a quiet game the heartbeats keep it (one
 * stream, nothing logged for them); stalled, it is noticed by its silence, said as a lost
 * connection, and reopened after its last event; a move the other seat made meanwhile (over
 * Connect's JSON, not through the page) shows once it is, in the log once.
 */
async function stalledNetwork(context, errors) {
  const { gameId, tokens } = await lobbyGame(2);
  // The page is the seat that waits; the seat with a move makes it during the stall.
  const legal = await Promise.all(tokens.map((token) => call("ListLegalMoves", token, { gameId })));
  const mover = legal.findIndex((answer) => answer.moves?.length);
  if (mover < 0) throw new Error("no seat has a move in a new game of Gin");
  const watcher = 1 - mover;
  const proxy = await stallingProxy(args.url);
  try {
    const link = seatLink(gameId, tokens[watcher], {
      seat: watcher,
      base: proxy.url,
      search: `?heartbeat_s=${STALL_HEARTBEAT_S}`,
    });
    const { page, calls, opened } = await open(context, link, errors);
    await opened;
    await page.waitForSelector("section.hand .cards", { timeout: STEP_MS });
    // Every status the page says from now on (a retry's may stand for a second only).
    await page.evaluate(() => {
      const status = document.querySelector("p.status");
      window.statuses = [];
      new MutationObserver(() => window.statuses.push(status.textContent ?? "")).observe(status, {
        childList: true,
        characterData: true,
        subtree: true,
      });
    });
    const logged = await page.$$eval("ol.events li", (items) => items.length);
    await page.waitForTimeout(QUIET_MS);
    const quiet = {
      streams: calls.streams,
      logged: await page.$$eval("ol.events li", (items) => items.length),
      statuses: await page.evaluate(() => window.statuses),
    };
    if (quiet.streams !== 1 || quiet.statuses.some((text) => text.startsWith(LOST)))
      throw new Error(`a quiet game's stream was given up: ${JSON.stringify(quiet)}`);
    if (quiet.logged !== logged)
      throw new Error(`the log grew from ${logged} to ${quiet.logged} lines in a quiet game`);

    const stalled = proxy.stall();
    if (stalled !== 1) throw new Error(`${stalled} streams to stall, not one`);
    const moved = await call("SubmitCommand", tokens[mover], {
      gameId,
      commandId: randomUUID(),
      expectedVersion: legal[mover].version,
      command: legal[mover].moves[0].command,
    });
    const first = moved.events[0].version;
    // Caught up: the move's first event in the log, and the page's state as of the move or later.
    await page.waitForSelector(`ol.events li[data-version="${first}"]`, { timeout: STEP_MS });
    await page.waitForFunction(
      (version) => BigInt(document.getElementById("app")?.dataset.version ?? 0) >= BigInt(version),
      moved.version,
      { timeout: STEP_MS },
    );
    const statuses = await page.evaluate(() => window.statuses);
    const versions = await page.$$eval("ol.events li", (items) =>
      items.map((item) => item.dataset.version),
    );
    if (!statuses.some((text) => text.startsWith(LOST)))
      throw new Error(`the page never said it reconnects: ${JSON.stringify(statuses)}`);
    if (calls.streams < 2) throw new Error(`${calls.streams} StreamEvents calls: not reopened`);
    if (new Set(versions).size !== versions.length || versions.includes(undefined))
      throw new Error(`the log is not each event once: ${JSON.stringify(versions)}`);
    if (await page.$("#app[data-dead=true]")) throw new Error("a stalled network killed the link");
    const back = (await page.textContent("p.status")) ?? "";
    await page.close();
    return {
      streams: calls.streams,
      noticed: statuses.find((text) => text.startsWith(LOST)),
      back,
      caughtUp: first,
    };
  } finally {
    proxy.close();
  }
}

/** The page's status line, its move buttons, and whether any of them can be pressed. */
function statusAndMoves(page) {
  return page.$eval("#app", (app) => {
    const buttons = [...app.querySelectorAll("button.move")];
    return {
      status: app.querySelector("p.status")?.textContent ?? "",
      moves: buttons.map((b) => b.dataset.label ?? ""),
      enabled: buttons.filter((b) => !b.disabled).length,
      version: app.dataset.version ?? "",
    };
  });
}

/**
 * A busy server, held by routes until the script has looked: the page's first stream slow to
 * answer, then a move slow to be answered. Until its first state the page says it is connecting
 * (it showed the table's empty sections, not a word); while a move is on its way, that it is
 * sent (it said "Your move." beside greyed-out buttons), also when the stream pushes states
 * meanwhile, the move's and the other seat's next one; once the move is answered, though its
 * answer is older than that state, or refused, it says what the state says, its moves
 * playable. Two people (no bot moves meanwhile): the page is the one with the first move
 * (to take or pass Gin's upcard); the other passes too, and the page's seat draws next.
 */
async function slowServer(context, errors) {
  const { gameId, tokens } = await lobbyGame(2);
  const legal = await Promise.all(tokens.map((token) => call("ListLegalMoves", token, { gameId })));
  const mine = legal.findIndex((answer) => answer.moves?.length);
  if (mine < 0) throw new Error("no seat has a move in a new game of Gin");
  const other = tokens[1 - mine];
  const report = {};

  // The first stream, held: the page has run (it opened the stream) and shows no state yet.
  const streamAsked = gate();
  const streamHeld = gate();
  // Routed before the page opens: its stream may be asked for as soon as it does.
  const page = await context.newPage();
  page.on("pageerror", (error) => errors.push(`slow server: ${error.message}`));
  await page.route(STREAM, async (route) => {
    streamAsked.open();
    await streamHeld.promise; // and any later stream not at all
    await route.continue();
  });
  await page.goto(seatLink(gameId, tokens[mine], { seat: mine }));
  await within(streamAsked.promise, "StreamEvents call");
  report.connecting = await statusAndMoves(page);
  streamHeld.open();
  if (report.connecting.status !== CONNECTING || report.connecting.version)
    throw new Error(`while the stream is slow: ${JSON.stringify(report.connecting)}`);
  await page.waitForSelector("section.hand .cards", { timeout: STEP_MS });
  report.connected = await statusAndMoves(page);
  if (report.connected.status !== YOUR_MOVE)
    throw new Error(`once the state came: ${JSON.stringify(report.connected)}`);

  const pass = 'button.move[data-label^="Pass"]';
  const plays = () => page.$eval("#app", (app) => Number(app.dataset.plays ?? 0));
  const answered = (count) =>
    page.waitForFunction(
      (n) => Number(document.getElementById("app")?.dataset.plays ?? 0) > n,
      count,
      { timeout: STEP_MS },
    );

  // A move the network loses: every attempt (submit retries a lost connection) held, then reset;
  // the read the page makes after the refusal held too (a busy server), until looked at: the page
  // is as its state says again without it.
  let sent = gate();
  const lost = gate();
  const read = gate();
  await page.route(SUBMIT, async (route) => {
    sent.open();
    await lost.promise;
    await route.abort("connectionreset");
  });
  await page.route(GET_VIEW, async (route) => {
    await read.promise;
    await route.continue();
  });
  let before = await plays();
  await page.click(pass);
  await within(sent.promise, "SubmitCommand call");
  report.lostSending = await statusAndMoves(page);
  lost.open();
  await answered(before);
  await page.unroute(SUBMIT);
  report.lost = {
    ...(await statusAndMoves(page)),
    notice: (await page.textContent("p.notice")) ?? "",
  };
  read.open();
  if (report.lostSending.status !== SENDING || report.lostSending.enabled)
    throw new Error(`while the move is sent: ${JSON.stringify(report.lostSending)}`);
  if (
    report.lost.status !== YOUR_MOVE ||
    !report.lost.enabled ||
    !report.lost.notice.startsWith(UNREACHABLE) ||
    !report.lost.notice.includes(NO_CONNECTION)
  )
    throw new Error(`once the move was refused: ${JSON.stringify(report.lost)}`);

  // A move played, its answer held until the stream has shown the move's state and the other
  // seat's pass after it: the answer is then older than what the page shows.
  sent = gate();
  const release = gate();
  await page.route(SUBMIT, async (route) => {
    const response = await route.fetch(); // played
    sent.open();
    await release.promise;
    await route.fulfill({ response });
  });
  before = await plays();
  await page.click(pass);
  await within(sent.promise, "SubmitCommand call");
  const played = await call("ListLegalMoves", other, { gameId });
  const otherPass = played.moves?.find((move) => /^Pass/.test(move.label));
  if (!otherPass) throw new Error(`the other seat cannot pass: ${JSON.stringify(played)}`);
  const passed = await call("SubmitCommand", other, {
    gameId,
    commandId: randomUUID(),
    expectedVersion: played.version,
    command: otherPass.command,
  });
  await page.waitForFunction(
    (version) => BigInt(document.getElementById("app")?.dataset.version ?? 0) >= BigInt(version),
    passed.version,
    { timeout: STEP_MS },
  );
  report.sending = await statusAndMoves(page);
  release.open();
  await answered(before);
  await page.unroute(SUBMIT);
  report.played = await statusAndMoves(page);
  if (report.sending.status !== SENDING || report.sending.enabled || !report.sending.moves.length)
    throw new Error(`while the move's answer is slow: ${JSON.stringify(report.sending)}`);
  if (report.played.status !== YOUR_MOVE || report.played.enabled !== report.played.moves.length)
    throw new Error(`once the move was answered: ${JSON.stringify(report.played)}`);
  await page.close();
  return report;
}

/** Two people who never move, on a turn clock of a second, away after one time-out: the tab of
 * a seat gone away says so (its only move is to come back), not "Your move.". */
async function awaySeat(context, errors) {
  const game = await lobbyGame(2, { gin: { turnTimeMs: 1000, maxTimeouts: 1 } });
  const tabs = [];
  for (const [seat, token] of game.tokens.entries()) {
    const tab = await open(context, seatLink(game.gameId, token, { seat }), errors);
    await tab.opened;
    tabs.push(tab);
  }
  const deadline = Date.now() + STEP_MS;
  while (Date.now() < deadline) {
    for (const [seat, { page }] of tabs.entries()) {
      const status = (await page.textContent("p.status")) ?? "";
      if (status.startsWith(AWAY)) {
        const buttons = await page.$$eval("button.move", (all) => all.map((b) => b.textContent));
        if (!buttons.some((label) => /Come back/.test(label ?? "")))
          throw new Error(`seat ${seat} is said away but offers ${JSON.stringify(buttons)}`);
        for (const { page: tab } of tabs) await tab.close();
        return { seat, status, buttons };
      }
    }
    await tabs[0].page.waitForTimeout(200);
  }
  throw new Error(`no tab said "${AWAY}…" within ${STEP_MS} ms`);
}

/** A page's turn clock for the seat to act: its seconds left ("to act: 0:26 left"). */
async function secondsLeft(page) {
  const text = (await page.textContent("tr.acting td.clock")) ?? "";
  const left = /(\d+):(\d\d) left/.exec(text);
  if (!left) throw new Error(`no time left in the seats' panel: "${text}"`);
  return Number(left[1]) * 60 + Number(left[2]);
}

/**
 * The turn clock in browsers whose clocks are 40 s slow and 40 s fast (Date.now() shifted): the
 * deadline (SeatToAct.deadline_ms) is on the server's clock, and the time left each shows must be
 * the server's, give or take CLOCK_SLACK_S (it showed 1:03 of a 30 s turn, and 0:00). The pages open
 * EVENTS_AGE_MS after the game's last event, so that its time is not the present.
 */
async function skewedClocks(context, errors) {
  const { gameId, tokens } = await lobbyGame(2, { gin: { turnTimeMs: 30_000 } });
  await new Promise((resolve) => setTimeout(resolve, EVENTS_AGE_MS));
  const pages = await Promise.all(
    SKEWS_MS.map(async (skew, seat) => {
      const page = await context.newPage();
      page.on("pageerror", (error) => errors.push(`skew ${skew}: ${error.message}`));
      await page.addInitScript((ms) => {
        const real = Date.now;
        Date.now = () => real() + ms;
      }, skew);
      await page.goto(seatLink(gameId, tokens[seat], { seat }));
      await page.waitForSelector("tr.acting td.clock", { timeout: STEP_MS });
      await page.waitForFunction(
        () => / left/.test(document.querySelector("tr.acting td.clock")?.textContent ?? ""),
        undefined,
        { timeout: STEP_MS },
      );
      return page;
    }),
  );
  const { toAct } = await call("GetView", tokens[0], { gameId });
  const deadline = Number(toAct.find((t) => Number(t.deadlineMs ?? 0))?.deadlineMs ?? 0);
  if (!deadline) throw new Error(`no seat on the clock: ${JSON.stringify(toAct)}`);
  const report = {};
  for (const [i, page] of pages.entries()) {
    const left = (deadline - Date.now()) / 1000; // this machine's clock is the server's
    const shown = await secondsLeft(page);
    report[SKEWS_MS[i]] = { shown, left };
    if (shown - left > CLOCK_SLACK_S || shown - left < -1)
      throw new Error(
        `a browser ${SKEWS_MS[i] / 1000} s off shows ${shown} s left, not ${left.toFixed(1)}`,
      );
    await page.close();
  }
  return report;
}

/**
 * A link whose `seat=` names the other seat, and one with none: the page is its token's seat, as
 * the server says (it showed the token's hand as the link's seat's, called the link's seat
 * "(you)", and the player's own moves another seat's), and says what the link got wrong.
 */
async function linkSeats(context, errors) {
  const { gameId, tokens } = await lobbyGame(2);
  const mine = 1;
  const seen = (page) =>
    page.$eval("#app", (app) => ({
      seat: app.dataset.seat,
      header: app.querySelector("p.game-id")?.textContent ?? "",
      you: [...app.querySelectorAll("tr[data-seat]")]
        .filter((row) => row.textContent?.includes("(you)"))
        .map((row) => row.dataset.seat),
      hand: [...app.querySelectorAll("section.hand [data-code]")].map((tile) => tile.dataset.code),
      text: app.textContent ?? "",
    }));
  const { view } = await call("GetView", tokens[mine], { gameId });
  const hand = view.gin.hand.map((card) => card.code);
  const report = {};
  for (const [name, seat] of [
    ["otherSeat", 1 - mine],
    ["noSeat", undefined],
  ]) {
    const link = new URL(seatLink(gameId, tokens[mine]));
    const fragment = new URLSearchParams(link.hash.slice(1));
    if (seat === undefined) fragment.delete("seat");
    else fragment.set("seat", String(seat));
    link.hash = String(fragment);
    const { page, opened } = await open(context, link.href, errors);
    await opened;
    await page.waitForSelector("section.hand .cards", { timeout: STEP_MS });
    const shown = await seen(page);
    report[name] = { ...shown, text: undefined };
    if (shown.seat !== String(mine) || !shown.header.includes(`you are seat ${mine}`))
      throw new Error(`${name}: the page is not seat ${mine}: ${JSON.stringify(shown)}`);
    if (JSON.stringify(shown.you) !== JSON.stringify([String(mine)]))
      throw new Error(`${name}: "(you)" is seats ${JSON.stringify(shown.you)}`);
    if (JSON.stringify(shown.hand) !== JSON.stringify(hand))
      throw new Error(`${name}: the hand shown is ${shown.hand}, not the seat's ${hand}`);
    if (shown.text.includes(`Seat ${1 - mine} (you)`))
      throw new Error(`${name}: seat ${1 - mine} is called "(you)"`);
    if ((seat !== undefined) !== shown.header.includes(`the link says seat ${seat}`))
      throw new Error(`${name}: the header says "${shown.header}"`);
    report[name].page = page;
  }
  // The seat's own move, in the log as its own: the other seat passes the upcard if it has the
  // move, then the page plays its first.
  const page = report.otherSeat.page;
  if (!(await page.$("button.move"))) {
    const legal = await call("ListLegalMoves", tokens[1 - mine], { gameId });
    const move = legal.moves.find((m) => /^Pass/.test(m.label)) ?? legal.moves[0];
    await call("SubmitCommand", tokens[1 - mine], {
      gameId,
      commandId: randomUUID(),
      expectedVersion: legal.version,
      command: move.command,
    });
  }
  await page.click("button.move", { timeout: STEP_MS });
  await page.waitForSelector("ol.events li.mine", { timeout: STEP_MS });
  report.mine = await page.$$eval("ol.events li.mine", (items) =>
    items.map((item) => item.textContent ?? ""),
  );
  if (!report.mine.every((line) => line.includes(`Seat ${mine} (you)`)))
    throw new Error(`the seat's own moves read ${JSON.stringify(report.mine)}`);
  for (const name of ["otherSeat", "noSeat"]) {
    await report[name].page.close();
    delete report[name].page;
  }
  return report;
}

/** Everything the page's live region says (the announcer: what a screen reader hears unasked),
 * kept in `window.heard`: from the page's first script on (an init script), since a page that
 * opens late (a loaded machine) may find the time already short and say so as it first draws. */
function listen(page) {
  return page.addInitScript(() => {
    window.heard = [];
    new MutationObserver((records) => {
      for (const record of records)
        if (record.target.classList?.contains("announcer"))
          for (const node of record.addedNodes) window.heard.push(node.textContent ?? "");
    }).observe(document, { childList: true, subtree: true });
  });
}

/**
 * A seat on a turn clock of HURRY_TURN_MS that does not move (two people: no bot moves for the
 * other): while its time is plentiful nothing hurries it; once it is short, a line says so with the
 * time left (in sight wherever the page is scrolled: sticky) and its clock is marked; a screen
 * reader hears it once, not at every redraw of the clock; after the time-out, with the other seat
 * on the clock, the line is gone. The page warned of nothing before: the time-out was the news.
 */
async function hurriedSeat(context, errors) {
  const { gameId, tokens } = await lobbyGame(2, { gin: { turnTimeMs: HURRY_TURN_MS } });
  const legal = await Promise.all(tokens.map((token) => call("ListLegalMoves", token, { gameId })));
  const mover = legal.findIndex((answer) => answer.moves?.length);
  if (mover < 0) throw new Error("no seat has a move in a new game of Gin");
  const { page, opened } = await open(
    context,
    seatLink(gameId, tokens[mover], { seat: mover }),
    errors,
    listen,
  );
  await opened;
  await page.waitForSelector("tr.acting td.clock", { timeout: STEP_MS });
  const report = {};
  const early = await secondsLeft(page);
  const hurry = () => page.textContent("p.hurry");
  if (early > HURRY_TURN_MS / 2000 + 1 && (await hurry()))
    throw new Error(`with ${early} s left of ${HURRY_TURN_MS} ms the page says "${await hurry()}"`);
  await page.waitForFunction(
    (text) => document.querySelector("p.hurry")?.textContent?.startsWith(text),
    HURRY,
    {
      timeout: STEP_MS,
    },
  );
  report.shown = await hurry();
  report.left = await secondsLeft(page);
  report.marked = await page.$eval("tr.acting td.clock", (cell) =>
    cell.classList.contains("short"),
  );
  report.sticky = await page.$eval("p.hurry", (line) => getComputedStyle(line).position);
  if (report.left > HURRY_TURN_MS / 2000 || !report.marked || report.sticky !== "sticky")
    throw new Error(`once the time is short: ${JSON.stringify(report)}`);
  // The time-out, then the other seat on the clock: the line goes.
  await page.waitForSelector("ol.events li", { timeout: STEP_MS });
  await page.waitForFunction(
    () => /ran out of time/.test(document.querySelector("ol.events")?.textContent ?? ""),
    undefined,
    { timeout: STEP_MS },
  );
  await page.waitForFunction(() => !document.querySelector("p.hurry")?.textContent, undefined, {
    timeout: STEP_MS,
  });
  report.heard = (await page.evaluate(() => window.heard)).filter((line) => line.startsWith(HURRY));
  if (report.heard.length !== 1)
    throw new Error(
      `a screen reader heard the warning ${report.heard.length} times: ${JSON.stringify(report.heard)}`,
    );
  await page.close();
  return report;
}

/**
 * A link with a player's token, which the server lets watch any game as a spectator: the page
 * watches (it asked for legal moves, which are a seat's, and said the link "no longer works"),
 * with no hand of its own, and shows the seats' moves live.
 */
async function watcher(context, errors, token) {
  const { gameId, tokens } = await lobbyGame(2);
  const fragment = new URLSearchParams({ game: gameId, kind: "gin", token });
  const { page, opened } = await open(context, new URL(`/#${fragment}`, args.url).href, errors);
  await opened;
  await page.waitForSelector("#app[data-seat='-1'] section.table dl", { timeout: STEP_MS });
  const seen = () =>
    page.$eval("#app", (app) => ({
      dead: app.dataset.dead === "true",
      header: app.querySelector("p.game-id")?.textContent ?? "",
      status: app.querySelector("p.status")?.textContent ?? "",
      hand: !app.querySelector("section.hand")?.hidden,
      moves: app.querySelector("section.moves")?.textContent ?? "",
    }));
  const report = { opened: await seen() };
  if (
    report.opened.dead ||
    !report.opened.header.includes("you are watching") ||
    report.opened.hand
  )
    throw new Error(`a spectator's link: ${JSON.stringify(report.opened)}`);
  // A seat's move, made elsewhere, in the spectator's log live.
  const legal = await Promise.all(tokens.map((t) => call("ListLegalMoves", t, { gameId })));
  const mover = legal.findIndex((answer) => answer.moves?.length);
  const moved = await call("SubmitCommand", tokens[mover], {
    gameId,
    commandId: randomUUID(),
    expectedVersion: legal[mover].version,
    command: legal[mover].moves[0].command,
  });
  await page.waitForSelector(`ol.events li[data-version="${moved.events[0].version}"]`, {
    timeout: STEP_MS,
  });
  report.moved = await seen();
  if (report.moved.dead) throw new Error(`after a move: ${JSON.stringify(report.moved)}`);
  await page.close();
  return report;
}

/**
 * The network gone (a phone in a lift) while the stream waits to be reopened, then back: offline,
 * the page says so at once; online, it reads the game at once, not when the reconnection's wait
 * (ONLINE_WAIT_S at least by then, up to 30 s) runs out, while a turn clock may be running.
 */
async function backOnline(context, errors) {
  const { gameId, token } = await lobbyGame();
  const { page, calls, opened } = await open(context, seatLink(gameId, token), errors, (tab) =>
    tab.route(STREAM, (route) => route.abort("internetdisconnected")),
  );
  await opened;
  const wait = new RegExp(`trying again in (\\d+) s`);
  await page.waitForFunction(
    ([source, least]) =>
      Number(new RegExp(source).exec(document.querySelector("p.status")?.textContent ?? "")?.[1]) >=
      least,
    [wait.source, ONLINE_WAIT_S],
    { timeout: 4 * STEP_MS },
  );
  const report = { waiting: await page.textContent("p.status"), streams: calls.streams };
  await context.setOffline(true);
  await page.waitForFunction(
    (text) => document.querySelector("p.status")?.textContent?.startsWith(text),
    OFFLINE,
    { timeout: STEP_MS },
  );
  report.offline = await page.textContent("p.status");
  await page.unroute(STREAM);
  const back = Date.now();
  await context.setOffline(false);
  await page.waitForSelector("section.hand .cards", { timeout: STEP_MS });
  report.backMs = Date.now() - back;
  report.back = await page.textContent("p.status");
  if (report.backMs > ONLINE_BACK_MS || report.back !== YOUR_MOVE)
    throw new Error(`back online: ${JSON.stringify(report)}`);
  await page.close();
  return report;
}

/** The links the server refuses, and the broken network. */
async function linkCases(context, errors, report) {
  const mine = await lobbyGame();
  const other = await lobbyGame();
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
}

async function main() {
  const all = ["links", "stall", "away", "seat", "skew", "slow", "hurry", "watch", "online"];
  const cases = args.case
    ? [args.case]
    : all.filter((name) => name !== "watch" || args["watch-token"]);
  if (!cases.every((name) => all.includes(name)))
    throw new Error(`--case is one of ${all.join(", ")}, not ${args.case}`);
  const { context, close } = await launch(args.chromium);
  const errors = [];
  const report = {};
  try {
    if (cases.includes("links")) await linkCases(context, errors, report);
    if (cases.includes("stall")) report.stall = await stalledNetwork(context, errors);
    if (cases.includes("away")) report.away = await awaySeat(context, errors);
    if (cases.includes("seat")) report.seat = await linkSeats(context, errors);
    if (cases.includes("skew")) report.skew = await skewedClocks(context, errors);
    if (cases.includes("slow")) report.slow = await slowServer(context, errors);
    if (cases.includes("hurry")) report.hurry = await hurriedSeat(context, errors);
    if (cases.includes("watch")) report.watch = await watcher(context, errors, args["watch-token"]);
    if (cases.includes("online")) report.online = await backOnline(context, errors);
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
