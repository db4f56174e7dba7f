// Plays one whole game through the web client in headless Chromium (Debian's, driven by
// playwright-core): the lobby creates it, one tab per human seat clicks legal-move buttons until
// the final settlement shows, and every move a tab makes must appear live in the other tabs'
// event logs (StreamEvents). One move is sent stale on purpose: the server refuses it, and the
// page must keep saying so after it reads the game again. Saves screenshots. Prints one JSON line
// of what it saw; exits 1 on any failure. Run by tests/web/test_web.py (pytest), which starts the
// server:
//
//   node test/play.mjs --url http://127.0.0.1:8080 --kind gin --preset single-hand \
//     --seats 2 --humans 2 --out /tmp/croupier-screenshots
//
// With PLAY_DEBUG=1 in its environment it says on stderr, with the clock's milliseconds, each
// move it makes and each phase it ends (the lobby, the tabs, the moves, the end): where the
// time goes.
//
// With --host game.test the page is opened at http://game.test:PORT/ (Chromium resolves the name
// to the URL's own address): an origin that is not localhost and not https, so no secure context,
// where browsers have no crypto.randomUUID; every move must work there too.
//
// With --phone it is a phone's screen (chromium.mjs, PHONE: 390 px wide, touch) and every press a
// tap: at every look, nothing may need scrolling sideways, every control (button, link, field)
// must be at least MIN_TARGET_PX each way, and no text smaller than MIN_TEXT_PX.
//
// In Hoola and Rummy, every meld a move names ("on meld #4") must be on the table by that number.
// In Rummy, the cards under the discard pile's top (the page keeps them from the events: the view
// has the top and the count) must be the view's count less the top, after every move.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { launch, methodOf } from "./chromium.mjs";
import { SUBMIT, chooser, look, seeded, sendMovesStale } from "./player.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    kind: { type: "string" },
    preset: { type: "string", default: "" },
    seats: { type: "string", default: "2" },
    humans: { type: "string", default: "1" },
    rounds: { type: "string", default: "" },
    out: { type: "string", default: "/tmp/croupier-screenshots" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
    "max-moves": { type: "string", default: "1500" },
    seed: { type: "string", default: "1" },
    host: { type: "string", default: "" },
    phone: { type: "boolean", default: false },
  },
});
/** A finger's target, at least (Apple's and WCAG's AAA 44 px), and the smallest text to read. */
const MIN_TARGET_PX = 44;
const MIN_TEXT_PX = 12;
/** How long one step may take: a move's answer, an event reaching another tab, a bot's move. */
const STEP_MS = 20_000;
/** The page's address: --url, or with --host that name in place of the URL's host, which Chromium
 * is told to resolve to the URL's own address. */
const pageUrl = new URL(args.url);
const flags = [];
if (args.host) {
  flags.push(`--host-resolver-rules=MAP ${args.host} ${pageUrl.hostname}`);
  pageUrl.hostname = args.host;
}
/** What the event log must never read like: messages' raw fields rather than words. */
const RAW_WORDS = /Dealer:|commitment|[0-9a-f]{32}|deadline ms|\[card/;
/** A label inside a CSS attribute selector's double quotes. */
const CSS_ESCAPE = (text) => text.replace(/["\\]/g, "\\$&");
/** With PLAY_DEBUG set: a line on stderr, after the clock's milliseconds (where time goes). */
const debug = (...what) => {
  if (process.env.PLAY_DEBUG) console.error(Date.now() % 100000, ...what);
};
/** The moves this run makes: the same seed clicks the same way on the same deal. */
const choose = chooser(seeded(args.seed));

/** After a refused move: the page reads the game again and offers its moves anew, and the refusal
 * must still be there, in its own place, in plain words. */
async function refusalStaysShown(page) {
  await page.waitForSelector("button.move:not([disabled])", { timeout: STEP_MS });
  const notice = await page.textContent("p.notice");
  if (!/^Not played: the game moved on/.test(notice ?? ""))
    throw new Error(`a refused move's notice is "${notice}" once the page read the game again`);
  const status = await page.textContent("p.status");
  if (/Not played/.test(status ?? "")) throw new Error(`the status says "${status}"`);
}

/** What on a phone's screen is in the way of a finger or an eye: the page wider than the screen
 * (scrolled sideways), controls smaller than a finger, text too small to read. Empty: nothing. */
function phoneTrouble(page, minTarget, minText) {
  return page.evaluate(
    ([minTarget, minText]) => {
      const trouble = [];
      const root = document.documentElement;
      if (root.scrollWidth > root.clientWidth)
        trouble.push(`${root.scrollWidth} px wide on a ${root.clientWidth} px screen`);
      const shown = (el) => el.getClientRects().length && !el.closest(".sr-only, [hidden]");
      for (const el of document.querySelectorAll("#app button, #app a, #app input, #app select")) {
        if (!shown(el)) continue;
        const { width, height } = el.getBoundingClientRect();
        if (width < minTarget || height < minTarget)
          trouble.push(`"${el.textContent.trim().slice(0, 30)}" is ${width}x${height}`);
      }
      for (const el of document.querySelectorAll("#app *")) {
        const own = [...el.childNodes].some((n) => n.nodeType === 3 && n.nodeValue.trim());
        const size = parseFloat(getComputedStyle(el).fontSize);
        if (own && shown(el) && size < minText)
          trouble.push(`"${el.textContent.trim().slice(0, 30)}" in ${size} px text`);
      }
      return [...new Set(trouble)];
    },
    [minTarget, minText],
  );
}

/** On a phone, with moves to make: at the top of the page (as it opens, or after reading the
 * table), the first move must be on the screen, not below the fold (it was: a scroll away under
 * the seats, the table and the hand). Empty: in sight. */
function movesOutOfSight(page) {
  return page.evaluate(() => {
    window.scrollTo(0, 0);
    const first = document.querySelector("button.move:not([disabled])");
    if (!first) return "";
    const { top, bottom } = first.getBoundingClientRect();
    return top >= 0 && bottom <= window.innerHeight
      ? ""
      : `the first move is at ${Math.round(top)} to ${Math.round(bottom)} px on a ${window.innerHeight} px screen`;
  });
}

/** Rummy: the cards the page shows under the discard pile's top must be the view's count less
 * the top (the page keeps them from the events, and shows none it cannot match to the view). The
 * move's own answer may be shown before the stream's events for it: waited for. */
function discardsAgree(page) {
  return page.waitForFunction(
    () => {
      const count = Number(document.querySelector("section.table .discard")?.dataset.count ?? 0);
      const under = document.querySelectorAll("section.table .under-discard [data-code]").length;
      return under === Math.max(0, count - 1);
    },
    undefined,
    { timeout: STEP_MS },
  );
}

/** The meld numbers the moves name ("Lay off 9♠ on meld #4", Hoola's and Rummy's) that the table
 * does not show: a player could not tell which meld a move was for. Empty: every one is shown. */
function meldsUnnamed(page) {
  return page.evaluate(() => {
    const shown = new Set(
      [...document.querySelectorAll("section.table .melds li")].map(
        (li) => /^#(\d+) /.exec(li.textContent ?? "")?.[1],
      ),
    );
    const named = [...document.querySelectorAll("button.move")].flatMap((b) =>
      [...(b.dataset.label ?? "").matchAll(/meld #(\d+)/g)].map((m) => m[1]),
    );
    return [...new Set(named.filter((id) => !shown.has(id)))];
  });
}

/** The fair-deal part once the game is over: the page checks the deal against the revealed seed
 * (src/fairdeal.ts), and must say it passed. Where the page has no WebCrypto (plain HTTP from a
 * host other than localhost) it must say it cannot check, and the same link opened at the
 * server's own address (localhost: a secure context) must pass. */
async function fairDealChecked(page, context, localUrl) {
  const done =
    "section.fair-deal[data-check=passed], section.fair-deal[data-check=failed], " +
    "section.fair-deal[data-check=unavailable]";
  await page.waitForSelector(done, { timeout: STEP_MS });
  let part = page;
  let local;
  if ((await page.$eval("section.fair-deal", (s) => s.dataset.check)) === "unavailable") {
    const address = new URL(page.url());
    address.host = localUrl.host;
    local = await context.newPage();
    await local.goto(address.href);
    await local.waitForSelector(done.split(", ").slice(0, 2).join(", "), { timeout: STEP_MS });
    part = local;
  }
  const check = await part.$eval("section.fair-deal", (s) => ({
    // "The whole fingerprint", "The revealed seed": each must look openable (its triangle).
    unmarked: [...s.querySelectorAll("summary")]
      .filter((summary) => getComputedStyle(summary).display !== "list-item")
      .map((summary) => summary.textContent),
    state: s.dataset.check,
    commitment: s.querySelector("code.commitment")?.textContent ?? "",
    verdict: s.querySelector(".verdict")?.textContent ?? "",
    checked: [...s.querySelectorAll("ul.checked li")].map((li) => li.textContent ?? ""),
  }));
  await local?.close();
  if (check.unmarked.length)
    throw new Error(
      `the fair-deal part's ${check.unmarked.join(", ")} shows no disclosure triangle`,
    );
  if (
    check.state !== "passed" ||
    !/^Checked: Your dealt hand matches the deck from the sealed seed/.test(check.verdict)
  )
    throw new Error(`the fair-deal check says "${check.verdict}" (${check.state})`);
  // The lobby's tab keeps the commitment it showed, the seed it drew and the game it asked for
  // (sessionStorage): the check then says the player's own seed was part of the shuffle, and
  // that the game is the one asked for.
  return {
    ...check,
    unavailableFirst: Boolean(local),
    ownSeed: /Your own seed/.test(check.verdict),
    shownGame: check.checked.some((line) => line.startsWith("The game is the one you were shown")),
  };
}

/** The long hex strings (digests, seeds) the page shows that are not the fair-deal part's own:
 * the commitment, and once the game is over the revealed seed (in its "whole" details). Anything
 * else would be something hidden shown. Empty: none. */
function hexShown(page) {
  return page.evaluate(() => {
    const allowed = new Set(
      [...document.querySelectorAll("section.fair-deal details code")].map((c) => c.textContent),
    );
    // Each text node by itself: the page's words run into one another in textContent ("seed"
    // and a seed's "eed3…" read as one hex string).
    const walker = document.createTreeWalker(document.getElementById("app"), NodeFilter.SHOW_TEXT);
    const found = [];
    for (let node = walker.nextNode(); node; node = walker.nextNode())
      for (const m of (node.nodeValue ?? "").matchAll(/[0-9a-f]{32,}/gi))
        if (!allowed.has(m[0])) found.push(m[0]);
    return found;
  });
}

/** Where the page runs: whether it is a secure context, and has crypto.randomUUID. */
function whereItRuns(page) {
  return page.evaluate(() => ({
    secureContext: window.isSecureContext,
    randomUUID: typeof globalThis.crypto?.randomUUID === "function",
  }));
}

async function main() {
  mkdirSync(args.out, { recursive: true });
  const { context, close } = await launch(args.chromium, flags, { phone: args.phone });
  const errors = [];
  // calls: the pages' requests to the service, by method (a move should cost one).
  const report = {
    kind: args.kind,
    phone: args.phone,
    moves: 0,
    live: 0,
    refused: 0,
    // Of `refused`: the stale move's own refusals (submit tries it again, each attempt stale).
    refusedStale: 0,
    refusalShown: false,
    finalSeen: [],
    fairDeal: [],
    movesInSight: 0,
    betweenRounds: [],
    calls: {},
  };
  const watch = (page, name) => {
    page.on("pageerror", (error) => errors.push(`${name}: ${error.message}`));
    page.on("request", (request) => {
      const method = methodOf(request);
      if (method) report.calls[method] = (report.calls[method] ?? 0) + 1;
    });
    page.on("console", (m) => {
      if (m.type() !== "error") return;
      // A move sent as the game moved on (a bot's move, a time-out) is answered ABORTED, HTTP
      // 409: the page says "Not played" and reads the game again, and the loop below looks
      // again. Chromium logs the answer's status on the console all the same.
      if (/Failed to load resource: .* status of 409\b/.test(m.text())) report.refused += 1;
      else errors.push(`${name}: console: ${m.text()}`);
    });
  };
  const prefix = args.phone ? `${args.kind}-phone` : args.kind;
  const shot = (page, name, fullPage = true) =>
    page.screenshot({ path: join(args.out, `${prefix}-${name}.png`), fullPage });
  /** What a phone's screen showed wrong, by where: the lobby, a move's look, the end. */
  const onPhone = async (page, where) => {
    if (!args.phone) return;
    const trouble = await phoneTrouble(page, MIN_TARGET_PX, MIN_TEXT_PX);
    if (trouble.length) throw new Error(`on a phone, ${where}: ${trouble.join("; ")}`);
  };
  try {
    // The lobby: the game, the preset (from ListPresets), the seats.
    debug("chromium started");
    const lobby = context.pages()[0] ?? (await context.newPage());
    watch(lobby, "lobby");
    await lobby.goto(pageUrl.href);
    report.origin = new URL(lobby.url()).origin;
    Object.assign(report, await whereItRuns(lobby));
    await lobby.selectOption("select[name=kind]", args.kind);
    if (args.preset) {
      await lobby.waitForSelector(`select[name=preset] option[value="${args.preset}"]`, {
        state: "attached",
        timeout: STEP_MS,
      });
      await lobby.selectOption("select[name=preset]", args.preset);
    }
    await lobby.fill("input[name=seats]", args.seats);
    await lobby.dispatchEvent("input[name=seats]", "change");
    await lobby.fill("input[name=humans]", args.humans);
    if (args.rounds) await lobby.fill("input[name=rounds]", args.rounds);
    await shot(lobby, "lobby");
    await onPhone(lobby, "the lobby");
    if (args.phone) await lobby.tap("button[type=submit]");
    else await lobby.click("button[type=submit]");
    await lobby.waitForSelector("a.seat-link", { timeout: STEP_MS }).catch(async (error) => {
      throw new Error(
        `no seat links: the lobby says "${await lobby.textContent("p.status")}" (${error.message})`,
      );
    });
    const links = await lobby.$$eval("a.seat-link", (as) =>
      as.map((a) => ({ seat: Number(a.dataset.seat), href: a.href })),
    );
    if (links.length !== Number(args.humans))
      throw new Error(`the lobby gave ${links.length} seat links for ${args.humans} people`);
    await shot(lobby, "seats");
    debug("the lobby made the game");

    // One tab per human seat.
    const tabs = [];
    for (const link of links) {
      const page = link.seat === links[0].seat ? lobby : await context.newPage();
      if (page !== lobby) watch(page, `seat ${link.seat}`);
      await page.goto(link.href);
      await page.waitForSelector("section.hand .cards, section.hand p", { timeout: STEP_MS });
      tabs.push({ seat: link.seat, page });
    }

    debug("every seat's tab open");
    const maxMoves = Number(args["max-moves"]);
    /** One move is sent stale: the first that a tab makes once the game has begun. */
    let staleSent = false;
    // Bounded: a move per look at most, and a look may find nothing to click.
    for (let look_ = 0; report.moves < maxMoves && look_ < 4 * maxMoves; look_++) {
      const looks = await Promise.all(tabs.map((t) => look(t.page)));
      if (looks.some((l) => l.done)) break;
      // A tab with moves to make; else wait for one (a bot's move, another tab's), or the end.
      const at = looks.findIndex((l) => l.moves.length);
      if (at < 0) {
        await Promise.race(
          tabs.flatMap((t) => [
            t.page.waitForSelector("button.move:not([disabled])", { timeout: STEP_MS }),
            t.page.waitForSelector("section.final[data-done=true]", { timeout: STEP_MS }),
          ]),
        );
        continue;
      }
      const tab = tabs[at];
      const before = looks[at];
      await onPhone(tab.page, `seat ${tab.seat} at version ${before.version}`);
      if (args.phone) {
        const away = await movesOutOfSight(tab.page);
        if (away) throw new Error(`on a phone, seat ${tab.seat}: ${away}`);
        report.movesInSight += 1;
      }
      // Between rounds any seat may deal the next: the page must not have the player wait for a
      // seat (a lobby bot never deals).
      if (before.moves.some((m) => ["nextRound", "nextHand"].includes(m.kind))) {
        const status = (await tab.page.textContent("p.status")) ?? "";
        report.betweenRounds.push(status);
        // "Waiting for X; meanwhile you may act…" is the page with the deal still on offer. A
        // bare "Waiting for X…" is a page with no moves: another tab dealt the round since
        // `before` was read (a race between tabs, not the wording this guards against).
        if (/^Waiting for .*meanwhile/.test(status))
          throw new Error(
            `seat ${tab.seat} may deal the next round, and the page says "${status}"`,
          );
      }
      const unnamed = await meldsUnnamed(tab.page);
      if (unnamed.length)
        throw new Error(`moves name melds ${unnamed.map((id) => `#${id}`)}, not on the table`);
      const move = choose(before.moves, before.melded);
      debug(tab.seat, move.kind, move.label);
      const stale = !staleSent && Number(before.version) > 1;
      const refusedBefore = report.refused;
      if (stale) await sendMovesStale(tab.page);
      // The tab in front, as a person brings forward the tab they click in: Chromium draws few
      // frames or none in a tab behind another, and playwright's click waits for two to see the
      // button stand still, so a click there often waited out its 2 s and the loop looked
      // again (a Koi-Koi game through two tabs took 93 to 112 s, 14 to 22 s in front).
      await tab.page.bringToFront();
      // The move by its label: if the tab has just redrawn (another tab's move arrived), a move
      // that is gone is not clicked, and the loop looks again.
      const button = tab.page
        .locator(`button.move[data-label="${CSS_ESCAPE(move.label)}"]`)
        .first();
      const press = args.phone ? button.tap({ timeout: 2000 }) : button.click({ timeout: 2000 });
      if (
        !(await press.then(
          () => true,
          () => false,
        ))
      ) {
        if (stale) await tab.page.unroute(SUBMIT); // nothing was sent: the next move will be
        continue;
      }
      // Answered: the page counted the play, and shows the game as of after it (or the refusal).
      await tab.page.waitForFunction(
        (plays) => Number(document.getElementById("app").dataset.plays ?? 0) > plays,
        before.plays,
        { timeout: STEP_MS },
      );
      const played = await tab.page.$eval("#app", (m) => m.dataset.played ?? "");
      report.moves += 1;
      if (stale) {
        await tab.page.unroute(SUBMIT);
        staleSent = true;
        report.refusedStale = report.refused - refusedBefore;
        if (played) throw new Error("a move sent at an older version was played");
        await refusalStaysShown(tab.page);
        report.refusalShown = true;
        await shot(tab.page, `seat${tab.seat}-refused`);
      }
      if (!played) continue; // refused (the game moved first): look again
      if (args.kind === "rummy") await discardsAgree(tab.page);
      // The move's first event, live in every other tab's log, from this seat.
      for (const other of tabs.filter((t) => t !== tab)) {
        await other.page.waitForSelector(
          `ol.events li[data-version="${played}"][data-seat="${tab.seat}"]`,
          { state: "attached", timeout: STEP_MS },
        );
        report.live += 1;
      }
      if (report.moves === 6)
        for (const t of tabs) {
          await shot(t.page, `seat${t.seat}-playing`);
          // In play, the commitment alone (whole in its details, shortened beside): no seed.
          const codes = await t.page.$$eval("section.fair-deal details code", (cs) => cs.length);
          const extra = await hexShown(t.page);
          if (codes !== 1 || extra.length)
            throw new Error(`seat ${t.seat} shows in play ${codes} digests, and ${extra}`);
        }
    }
    debug("the moves made");
    // The end: the final settlement, in every tab (each follows the stream to the end).
    for (const t of tabs) {
      await t.page.waitForSelector("section.final[data-done=true] .settlement", {
        timeout: STEP_MS,
      });
      const text = await t.page.textContent("section.final");
      if (!/Final settlement/.test(text) || !/Net:/.test(text))
        throw new Error(`seat ${t.seat}: no itemized final settlement`);
      // Over is over: nothing on the page may say the other seats are still playing.
      const page = await t.page.textContent("#app");
      if (/Nothing to do now/.test(page))
        throw new Error(`seat ${t.seat}: a finished game says "Nothing to do now"`);
      const status = await t.page.textContent("p.status");
      if (status !== "The game is over.")
        throw new Error(`seat ${t.seat}: the status says "${status}"`);
      const log = await t.page.$$eval("ol.events li", (items) => items.map((li) => li.textContent));
      const raw = log.find((line) => RAW_WORDS.test(line ?? ""));
      if (raw) throw new Error(`seat ${t.seat}: the event log reads "${raw}"`);
      report.fairDeal.push({
        seat: t.seat,
        ...(await fairDealChecked(t.page, context, new URL(args.url))),
      });
      const extra = await hexShown(t.page);
      if (extra.length)
        throw new Error(`seat ${t.seat} shows hex that is not its to see: ${extra}`);
      await onPhone(t.page, `seat ${t.seat} at the end`);
      report.finalSeen.push(t.seat);
      await shot(t.page, `seat${t.seat}-final`);
    }
    debug("every tab checked the end");
    // The replay timeline of the finished game.
    const timeline = await tabs[0].page.$eval("a.timeline", (a) => a.href);
    const page = await context.newPage();
    watch(page, "timeline");
    const answer = await page.goto(timeline);
    if (answer?.status() !== 200) throw new Error(`the timeline answered ${answer?.status()}`);
    // On a phone, its first screen only: a whole match's timeline is some 14,000 px long, a
    // 43,000-pixel-high image at the phone's three device pixels to each, which took over the
    // screenshot's 30 s on a loaded machine.
    await shot(page, "timeline", !args.phone);
    report.timeline = timeline;
    debug("the timeline shown");
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
