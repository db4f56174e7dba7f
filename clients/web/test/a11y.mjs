// A whole game played as a keyboard-only player with a screen reader plays it, in headless
// Chromium: the lobby by keys (Tab, typing, Enter), then every move by Tab and Enter alone, the
// page read through Chromium's accessibility tree. What it must keep:
//
// - the keyboard's focus: after every move that is answered it is on the moves (a move, or the
//   moves' own section while none can be pressed), never dropped to the page's start (every state
//   drew the moves anew, and a keyboard player tabbed through the page again after each move);
//   from there one Tab at most reaches the first move; after Play in the lobby, on the first
//   seat's link;
// - what a screen reader says unasked (the page's polite live region, and the notice, an alert):
//   the status line as it changes ("Your move."), each other seat's move as it comes, in words;
//   not the game's history as the page opens;
// - cards named in words, not symbols: no name in the accessibility tree has ♠♥♦♣ in it, the
//   hand is a list of cards ("queen of diamonds"; a Hanafuda card by its name, month and kind);
// - the parts of the page as named regions (the table, the hand, the moves, the log).
//
// Prints one JSON line of what it saw; exits 1 on any failure. Run by tests/web/test_web.py
// (pytest), which starts the server:
//
//   node test/a11y.mjs --url http://127.0.0.1:8080 --kind gin --preset single-hand --seats 2
import { parseArgs } from "node:util";
import { launch } from "./chromium.mjs";
import { SUBMIT, chooser, look, seeded, sendMovesStale } from "./player.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    kind: { type: "string" },
    preset: { type: "string", default: "" },
    seats: { type: "string", default: "2" },
    rounds: { type: "string", default: "" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
    "max-moves": { type: "string", default: "600" },
    seed: { type: "string", default: "1" },
  },
});
const STEP_MS = 20_000;
/** The keys a move may take to reach: past every other move, and not round the page. */
const MAX_TABS = 60;
const SUITS = /[♠♥♦♣]/;
/** The move sent stale, to be refused (as play.mjs does): the first, in a game that may be short. */
const STALE_MOVE = 1;
const FRENCH = /^(ace|[2-9]|10|jack|queen|king) of (spades|hearts|diamonds|clubs)$|^joker$/;
const MONTHS =
  "January|February|March|April|May|June|July|August|September|October|November|December";
const HANAFUDA = new RegExp(`^[A-Z][\\w -]*, (${MONTHS}), (bright|animal|ribbon|chaff)$`);

/** The moves this run makes (as play.mjs chooses): the same seed, the same way on the same deal. */
const choose = chooser(seeded(args.seed));

function focus(page) {
  return page.evaluate(() => {
    const active = document.activeElement;
    if (!active || active === document.body) return "body";
    if (active.matches("section.moves")) return "moves";
    const moves = [...document.querySelectorAll("button.move:not([disabled])")];
    if (moves.includes(active)) return `move ${moves.indexOf(active)}`;
    return `${active.tagName.toLowerCase()}.${active.className}`;
  });
}

/** Chromium's accessibility tree, as a screen reader gets it: the nodes it does not ignore. */
async function axNodes(page, cdp) {
  const { nodes } = await cdp.send("Accessibility.getFullAXTree");
  return nodes
    .filter((n) => !n.ignored)
    .map((n) => ({ role: n.role?.value ?? "", name: String(n.name?.value ?? "") }));
}

/** What the accessibility tree must say of a table, at any time: no card by its symbol, the
 * parts named, the notice watched (an alert even while empty), a live region. */
async function checkTree(page, cdp, where) {
  const nodes = await axNodes(page, cdp);
  const symbols = nodes.filter((n) => SUITS.test(n.name));
  if (symbols.length)
    throw new Error(`${where}: read as symbols: ${JSON.stringify(symbols.slice(0, 5))}`);
  const named = (role, name) => nodes.some((n) => n.role === role && n.name === name);
  for (const [role, name] of [
    ["region", "Table"],
    ["region", "Your hand"],
    ["region", "Your moves"],
    ["complementary", "What happens"],
    ["table", "Seats"],
  ])
    if (!named(role, name)) throw new Error(`${where}: no ${role} "${name}"`);
  if (!nodes.some((n) => n.role === "alert"))
    throw new Error(`${where}: no alert for a refused move`);
  const live = await page.$eval(".announcer", (a) => a.getAttribute("aria-live")).catch(() => "");
  if (live !== "polite") throw new Error(`${where}: no polite live region`);
  return nodes.length;
}

/** The hand's cards as a screen reader reads them: the list items of the "Your hand" region. */
async function handNames(page) {
  const yaml = await page.locator("section.hand").ariaSnapshot();
  return [...yaml.matchAll(/- listitem(?: "[^"]*")?: (.*)$/gm)].map((m) =>
    m[1].replace(/^"|"$/g, "").replace(/\s+,/g, ",").trim(),
  );
}

async function main() {
  const { context, close } = await launch(args.chromium);
  const errors = [];
  const report = {
    kind: args.kind,
    moves: 0,
    tabs: 0,
    focusAfterMove: {},
    refused: undefined,
    seatsKept: false,
    lobbyFocus: "",
    hand: [],
    announced: [],
    atOpen: [],
    axNodes: 0,
  };
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    page.on("pageerror", (error) => errors.push(error.message));
    const cdp = await context.newCDPSession(page);
    const key = async (name) => {
      await page.keyboard.press(name);
      report.tabs += name.includes("Tab") ? 1 : 0;
    };
    /** Tab (forwards) until `selector` has the focus. */
    const tabTo = async (selector) => {
      for (let i = 0; i < MAX_TABS; i++) {
        if (await page.evaluate((s) => document.activeElement?.matches(s), selector)) return;
        await key("Tab");
      }
      throw new Error(`no ${selector} in ${MAX_TABS} Tabs`);
    };

    // The lobby, by keys only.
    await page.goto(args.url);
    await page.waitForSelector("select[name=preset] option", { state: "attached" });
    await tabTo("select[name=kind]");
    await page.keyboard.type(
      { hoola: "Korean", koikoi: "Hanafuda", gin: "Gin", rummy: "Rummy" }[args.kind],
    );
    await page.waitForFunction(
      (k) => document.querySelector("select[name=kind]").value === k,
      args.kind,
      { timeout: STEP_MS },
    );
    if (args.preset) {
      await page.waitForSelector(`select[name=preset] option[value="${args.preset}"]`, {
        state: "attached",
        timeout: STEP_MS,
      });
      await tabTo("select[name=preset]");
      await page.keyboard.type(args.preset);
      const chosen = await page.$eval("select[name=preset]", (s) => s.value);
      if (chosen !== args.preset) throw new Error(`typed the preset ${args.preset}: ${chosen}`);
    }
    await tabTo("input[name=seats]");
    await key("ControlOrMeta+a");
    await page.keyboard.type(args.seats);
    await tabTo("input[name=humans]"); // leaving the field is its change
    if (args.rounds) {
      await tabTo("input[name=rounds]");
      await page.keyboard.type(args.rounds);
    }
    await tabTo("button[type=submit]");
    await key("Enter");
    await page.waitForSelector("a.seat-link", { timeout: STEP_MS });
    report.lobbyFocus = await page.evaluate(() => document.activeElement?.className ?? "");
    if (report.lobbyFocus !== "seat-link")
      throw new Error(`after Play the focus is on "${report.lobbyFocus}", not the seat's link`);
    const lobbyStatus = await page.getAttribute("p.status", "role");
    if (lobbyStatus !== "status") throw new Error("the lobby's status line is not a live status");
    await key("Enter"); // seat 0's link opens in this tab
    await page.waitForSelector("section.hand .cards, section.hand p", { timeout: STEP_MS });
    await page.waitForSelector("ol.events li", { timeout: STEP_MS });
    // What the live region says from now on, each addition.
    await page.evaluate(() => {
      window.announced = [...document.querySelectorAll(".announcer p")].map((p) => p.textContent);
      new MutationObserver((records) => {
        for (const r of records)
          for (const node of r.addedNodes) window.announced.push(node.textContent ?? "");
      }).observe(document.querySelector(".announcer"), { childList: true });
    });
    const history = await page.$$eval("ol.events li:not([data-live])", (items) => items.length);
    report.atOpen = await page.evaluate(() => window.announced.slice());
    // Moves made since the page opened (a bot's, as it loaded) are news, said once each.
    const live = await page.$$eval("ol.events li[data-live]", (items) => items.length);
    // The game so far is in the log, not said: at most the status lines, and the live moves.
    if (report.atOpen.length > 3 + live || history < 1)
      throw new Error(
        `as the page opened, with ${history} events (${live} since), it said ${report.atOpen}`,
      );
    report.axNodes = await checkTree(page, cdp, "at the start");
    // The seats and their clocks, drawn every half second, are the same elements all along (a
    // screen reader reading them kept losing its place): changed in place, if at all.
    const row = await page.$("table.seats tbody tr");
    await page.waitForTimeout(1200);
    report.seatsKept = await row.evaluate((node) => node.isConnected);
    if (!report.seatsKept) throw new Error("the seats' table was drawn anew");
    report.hand = await handNames(page);
    const cardName = args.kind === "koikoi" ? HANAFUDA : FRENCH;
    if (!report.hand.length || !report.hand.every((name) => cardName.test(name)))
      throw new Error(`the hand reads ${JSON.stringify(report.hand)}`);

    const maxMoves = Number(args["max-moves"]);
    for (let turn = 0; report.moves < maxMoves && turn < 4 * maxMoves; turn++) {
      const before = await look(page);
      if (before.done) break;
      if (!before.moves.length) {
        const waiting = await focus(page);
        await Promise.race([
          page.waitForSelector("button.move:not([disabled])", { timeout: STEP_MS }),
          page.waitForSelector("section.final[data-done=true]", { timeout: STEP_MS }),
        ]);
        // The turn come, the focus stays where it waited: a move is pressed by choice, not by
        // an Enter meant for the moment before.
        const now = await focus(page);
        if (waiting === "moves" && now !== "moves")
          throw new Error(`the turn came and the focus went from the moves to ${now}`);
        continue;
      }
      const move = choose(before.moves, before.melded);
      const stale = report.moves + 1 === STALE_MOVE && !report.refused;
      if (stale) await sendMovesStale(page);
      // From where the focus is, Tab (or Shift+Tab) to the move; Enter plays it.
      let pressed = false;
      for (let i = 0; i < MAX_TABS; i++) {
        const at = await focus(page);
        const index = at.startsWith("move ") ? Number(at.slice(5)) : -1;
        const now = await look(page);
        if (now.moves[index]?.label === move.label) {
          await key("Enter");
          pressed = true;
          break;
        }
        if (!now.moves.some((m) => m.label === move.label)) break; // gone: the game moved
        const target = now.moves.findIndex((m) => m.label === move.label);
        await key(index > target ? "Shift+Tab" : "Tab");
      }
      if (!pressed) {
        if (stale) await page.unroute(SUBMIT);
        continue;
      }
      await page.waitForFunction(
        (plays) => Number(document.getElementById("app").dataset.plays ?? 0) > plays,
        before.plays,
        { timeout: STEP_MS },
      );
      report.moves += 1;
      // The answer shown: where is the focus now? Never at the page's start.
      await page.waitForFunction(() => document.getElementById("app").dataset.busy === "false");
      await page.waitForTimeout(50); // the stream's state, racing the answer
      const at = await focus(page);
      const where = at.startsWith("move ") ? "move" : at;
      report.focusAfterMove[where] = (report.focusAfterMove[where] ?? 0) + 1;
      if (where !== "move" && where !== "moves")
        throw new Error(`after move ${report.moves} (${move.label}) the focus is on ${at}`);
      if (stale) {
        // Refused: said by the notice (an alert), and the focus back on the move, to try again.
        await page.unroute(SUBMIT);
        if (await page.$eval("#app", (app) => app.dataset.played))
          throw new Error("a move sent stale was played");
        await page.waitForSelector("button.move:not([disabled])", { timeout: STEP_MS });
        const notice = await page.$eval("p.notice", (p) => [p.getAttribute("role"), p.textContent]);
        const labels = (await look(page)).moves.map((m) => m.label);
        const on = await focus(page);
        report.refused = { notice, on, label: move.label };
        if (notice[0] !== "alert" || !/^Not played/.test(notice[1] ?? ""))
          throw new Error(`a refused move's notice: ${JSON.stringify(notice)}`);
        if (labels[Number(on.slice(5))] !== move.label)
          throw new Error(`after a refused ${move.label}, the focus is on ${on} of ${labels}`);
      }
      if (report.moves % 10 === 1) await checkTree(page, cdp, `after move ${report.moves}`);
    }
    await page.waitForSelector("section.final[data-done=true] .settlement", { timeout: STEP_MS });
    await checkTree(page, cdp, "at the end");
    report.announced = await page.evaluate(() => window.announced);
    const said = report.announced;
    if (said.some((text) => SUITS.test(text)))
      throw new Error(`said as symbols: ${said.filter((t) => SUITS.test(t)).slice(0, 3)}`);
    if (!said.includes("Your move.")) throw new Error("never said whose move it is");
    if (!said.includes("The game is over.")) throw new Error("never said the game is over");
    if (!said.some((text) => /^Seat [1-9]\d* (?!\(you\))/.test(text)))
      throw new Error("never said another seat's move");
    if (!said.some((text) => /^Seat 0 \(you\)/.test(text)))
      throw new Error("never said a move of mine");
    if (report.moves < 2) throw new Error(`only ${report.moves} moves`);
    if (errors.length) throw new Error(`the page reported errors:\n${errors.join("\n")}`);
  } finally {
    await close();
  }
  report.announced = report.announced.length;
  console.log(JSON.stringify(report));
}

main().catch((error) => {
  console.error(error?.stack ?? String(error));
  process.exit(1);
});
