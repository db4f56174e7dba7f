// What the browser tests' players share (play.mjs clicks, a11y.mjs uses the keyboard): a seeded
// generator, the choice of a plausible move, one look at a tab, and a move sent stale on purpose.
import { randomUUID } from "node:crypto";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import { SubmitCommandRequestSchema } from "@croupier/client/web";

/** The page's SubmitCommand requests, as playwright routes them. */
export const SUBMIT = "**/croupier.v1.GameService/SubmitCommand";

/** A small seeded generator (xorshift): the same seed plays the same way on the same deal. */
export function seeded(seed) {
  let state = Number(seed) >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 2 ** 32;
  };
}

const ORDER = "A23456789TJQK";
/** A card's rank (its code's first letter), for shedding high cards; jokers are kept. */
const rank = (code) => (code.startsWith("JK") ? -1 : ORDER.indexOf(code[0] ?? ""));

/** Which of the offered moves to make, drawing on `random`: plausible play, so that the game ends
 * soon (go out, meld, knock, shed high cards that are in no meld), like the server's bots
 * (service/bots.py). `melded`: the cards in melds on the table. */
export function chooser(random) {
  const pick = (list) => list[Math.floor(random() * list.length)];
  return (moves, melded) => {
    const by = (kind) => moves.filter((m) => m.kind === kind);
    const first = (...kinds) => kinds.map(by).find((l) => l.length)?.[0];
    const now =
      first("nextRound", "shobu", "knock", "declare", "play", "layDown") ??
      (by("meld").length
        ? by("meld").reduce((a, b) => (b.label.length > a.label.length ? b : a))
        : undefined) ??
      (random() < 0.9 ? first("layOff", "swapJoker", "takeDiscard") : undefined) ??
      (moves.some((m) => m.kind === "stop") && random() < 0.5 ? by("stop")[0] : undefined) ??
      first("drawStock", "draw", "endLayOffs", "pass");
    if (now) return now;
    const discards = by("discard");
    if (discards.length) {
      const loose = discards.filter((m) => !melded.includes(m.card));
      const weight = (m) => rank(m.card) + random() * 2;
      return (loose.length ? loose : discards).reduce((a, b) => (weight(b) > weight(a) ? b : a));
    }
    const captures = moves.filter((m) => /captur/i.test(m.label));
    return pick(captures.length && random() < 0.8 ? captures : moves);
  };
}

/** What a tab shows, in one look: whether the game is over there, the moves it offers, the cards
 * in melds on its table (a gin hand's own melds among them), its version, its plays and the
 * version its last play made (empty: refused). */
export function look(page) {
  return page.$eval("#app", (app) => ({
    done: Boolean(app.querySelector("section.final[data-done=true]")),
    moves: [...app.querySelectorAll("button.move:not([disabled])")].map((b, index) => ({
      index,
      kind: b.dataset.move ?? "",
      label: b.dataset.label ?? "",
      card: b.dataset.card ?? "",
    })),
    melded: [...app.querySelectorAll("section.table .melds [data-code]")].map(
      (c) => c.dataset.code,
    ),
    version: app.dataset.version,
    plays: Number(app.dataset.plays ?? 0),
    played: app.dataset.played ?? "",
  }));
}

/** Sends the page's moves as if chosen one version earlier (each attempt with a command id of its
 * own), until `unroute(SUBMIT)`: the server refuses them (ABORTED VERSION_CONFLICT), as it refuses
 * a move that crossed another seat's, but every run. The server reports the version the page
 * sent, so submit retries (a conflict at the version sent may be a time-out's race); every
 * attempt is stale, and the page is refused in the end. */
export async function sendMovesStale(page) {
  await page.route(SUBMIT, async (route) => {
    const request = fromBinary(SubmitCommandRequestSchema, route.request().postDataBuffer());
    request.expectedVersion -= 1n;
    request.commandId = randomUUID();
    await route.continue({ postData: Buffer.from(toBinary(SubmitCommandRequestSchema, request)) });
  });
}
