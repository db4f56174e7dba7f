// Croupier's reference web client. Without a seat's link (a game and a token in the fragment) it
// is the lobby: pick a game and a preset, and the server's lobby (croupier serve --lobby) creates
// a game with bots at the other seats and hands back one link per human seat, the seat token in
// the link's fragment (#…), which browsers never send to a server. With a seat's link, it is the
// table: the seat's view, its legal moves as buttons, the other seats' moves live over
// StreamEvents, the clocks, the settlements. The seat is the token's, as the server's views say
// it, whatever the link's `seat=`.
import { clone, fromJson, merge, toJson, type JsonValue } from "@bufbuild/protobuf";
import { createClient, type Interceptor } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import {
  asToken,
  bearer,
  Code,
  decodeError,
  decodeErrors,
  DEFAULT_HEARTBEAT_S,
  followGame,
  GameKind,
  GameService,
  isConnectionLoss,
  MAX_HEARTBEAT_S,
  shuffleCrypto,
  submit,
  type CroupierError,
  type GameClient,
  type GameEvent,
  type LegalMove,
  type Preset,
  RulesSchema,
  type SeatToAct,
  type View,
} from "@croupier/client/web";
import { prettyLabel, readable, spoken } from "./cards.js";
import { EventNarrator } from "./events.js";
import { checkSeatDeal, SealWatcher, shortHex, type Expected } from "./fairdeal.js";
import { DiscardPile } from "./pile.js";
import {
  BETWEEN_ROUNDS_MOVES,
  betweenRoundsStatus,
  clock,
  h,
  handOf,
  lastSettlement,
  morph,
  seatName,
  seatsOf,
  seatsPanel,
  roundHandsOf,
  settlementOf,
  statusFor,
  stepTimeOf,
  tableOf,
  timeIsShort,
  viewerSeat,
  words,
} from "./render.js";
import { ServerClock } from "./servertime.js";

const KINDS: Record<string, { kind: GameKind; title: string; seats: [number, number] }> = {
  hoola: { kind: GameKind.HOOLA, title: "Korean Hoola", seats: [2, 5] },
  koikoi: { kind: GameKind.KOIKOI, title: "Hanafuda Koi-Koi", seats: [2, 2] },
  gin: { kind: GameKind.GIN, title: "Gin Rummy", seats: [2, 2] },
  rummy: { kind: GameKind.RUMMY, title: "Rummy with jokers", seats: [2, 6] },
};
/** Coalesce the refreshes that a burst of events asks for. */
const REFRESH_DELAY_MS = 30;
/** The codes a move's answer has when the link itself is no good, so that trying again cannot
 * help: its token is not accepted (signed with a key the server no longer has, or for another
 * game), or its game is not on this server. */
const LINK_REFUSED = new Set<Code>([Code.Unauthenticated, Code.PermissionDenied, Code.NotFound]);
/** The same for reading the game, where INVALID_ARGUMENT is the link's too (a mangled game id);
 * a move's INVALID_ARGUMENT is about the move. */
const DEAD_LINK = new Set<Code>([...LINK_REFUSED, Code.InvalidArgument]);
const DEAD_LINK_TEXT =
  "This link no longer works: the game is gone, the server restarted without its keys, or the link is mistyped.";
/** The status line until the stream's first state: a busy server may take seconds to answer, and
 * the table's empty sections with not a word beside them look like a page that does nothing. */
const CONNECTING_TEXT = "Connecting…";
/** The status line while a move is on its way (its buttons greyed out), until its answer or its
 * refusal: "Your move." beside buttons that cannot be pressed would say the opposite. */
const SENDING_TEXT = "Sending your move…";
/** How long a refused move's notice stays up, unless the player moves again or the game ends. */
const NOTICE_MS = 10_000;
const CLOCK_TICK_MS = 500;
/** What the page says, once a turn, when the seat's own time is short (render.ts, timeIsShort):
 * seen wherever the page is scrolled to (a sticky line), heard once by screen readers. */
const HURRY_TEXT = "Your time is running out:";
/** What the page says when the browser goes offline, until it is back: the stream may sit there
 * without a word for a long while (a dead connection is noticed by its missing heartbeats), and a
 * move sent meanwhile cannot arrive. */
const OFFLINE_TEXT = "No network: this page picks the game up again as soon as it is back.";
/** How many announcements the screen reader's live region keeps (it says each as it is added). */
const ANNOUNCED_KEPT = 20;
/** The seat of a token that has none (a spectator's view): seatName calls no seat "you". */
const SPECTATOR = -1;
const MS_PER_SECOND = 1000;
/** The server's reason for a seat's call made with a studio's or a player's token, which watches
 * any game as a spectator (README, "Playing from a client"). */
const SEAT_TOKEN_REQUIRED = "SEAT_TOKEN_REQUIRED";

/** The server's clock, which the turn clocks count down against (servertime.ts: the browser's
 * own may be off by any amount): read off the events' recorded_at_ms and the answers' Date. */
const serverClock = new ServerClock();

/** Every answer's HTTP Date header, a reading of the server's clock (a stream's, as it opens). */
const dated: Interceptor = (next) => async (request) => {
  const response = await next(request);
  serverClock.observeDate(response.header.get("date"));
  return response;
};

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  // Errors decoded (CroupierError); each seat's token sent as `authorization: Bearer`.
  interceptors: [decodeErrors, bearer(), dated],
});
const anonymous: GameClient = createClient(GameService, transport);
const main = document.getElementById("app") as HTMLElement;

function message(error: unknown): string {
  const e = decodeError(error);
  return e.reason ? `${e.rawMessage} (${e.reason})` : e.rawMessage;
}

/** An error's code and reason, small, for whoever reports it: "NOT_FOUND · GAME_NOT_FOUND". */
function codeTag(error: CroupierError): HTMLElement {
  const code = (Code[error.code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
  // A lost connection has no answer of the service's to name: the browser's fetch failed, which
  // connect-web reports as UNKNOWN, a tag that read as the server's fault.
  const tag = isConnectionLoss(error) && !error.reason ? "NO_CONNECTION" : code;
  return h("small", "code", [tag, error.reason].filter(Boolean).join(" · "));
}

/** The game's own move a legal move carries (its case: "discard", "nextRound" …). */
function chosenMove(move: LegalMove): { case?: string; value?: { card?: unknown } } | undefined {
  const game = move.command?.game;
  return (game?.value as { move?: { case?: string; value?: { card?: unknown } } } | undefined)
    ?.move;
}

function moveKind(move: LegalMove): string {
  return chosenMove(move)?.case ?? "";
}

/** Why a move was not played, in the player's words. */
function refusal(error: CroupierError): string {
  if (isConnectionLoss(error))
    return navigator.onLine
      ? "Not played: the server could not be reached. Try again."
      : "Not played: this device has no network. Try again once it is back.";
  if (error.code === Code.Aborted)
    // "Another seat moved" was wrong for a seat open in two tabs (or on two devices): its other
    // tab's move came first.
    return "Not played: the game moved on before your move arrived (another move came first, from another seat or your own seat in another tab, or your time ran out). Here it is now.";
  return `Not played: ${error.rawMessage.replace(/\.?$/, ".")}`;
}

/** The heartbeat to ask for: the client's DEFAULT_HEARTBEAT_S, or the page address's `?heartbeat_s=N` (1 to
 * MAX_HEARTBEAT_S), with which the tests see a stalled connection noticed in seconds
 * (test/links.mjs). */
function heartbeatSeconds(): number {
  const asked = Number(new URLSearchParams(location.search).get("heartbeat_s"));
  return Number.isInteger(asked) && asked >= 1 && asked <= MAX_HEARTBEAT_S
    ? asked
    : DEFAULT_HEARTBEAT_S;
}

/** A seat's link; `bots`: the lobby's bot seats, which the page names as such (they never deal
 * a next round: betweenRoundsStatus). */
/** The lobby's reason when it has as many games as it takes (service/lobby.py). */
const LOBBY_FULL = "LOBBY_FULL";
/** The longest wait the page counts down from a Retry-After (a server's mistake must not make
 * the player wait a day). */
const MAX_RETRY_AFTER_S = 3600;
/** Random bytes of the seed this page draws for its player, after the server's commitment: as
 * many as the server's own seed has. */
const CLIENT_SEED_BYTES = 32;

/** What the commit-first flow (docs/shuffle.md, "Seed tickets") gives a new lobby game: the
 * server's ticket and commitment, then the player's seed, drawn only once the commitment is in. */
interface Sealed {
  readonly ticket: string;
  readonly commitment: string;
  readonly clientSeed: string;
}

/** The server's commitment, then the player's seed; a refusal's answer as it came; or undefined
 * when the server issues no tickets (an older one, or no lobby: the game's request says which). */
async function sealShuffle(): Promise<Sealed | Response | undefined> {
  const answer = await fetch("/lobby/commitments", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  if (answer.status === 404 || answer.status === 405) return undefined;
  if (!answer.ok) return answer;
  const { ticket, commitment } = (await answer.json()) as { ticket: string; commitment: string };
  // Drawn after the commitment is known, so that the server's seed could not be chosen to suit it.
  const bytes = crypto.getRandomValues(new Uint8Array(CLIENT_SEED_BYTES));
  const clientSeed = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  return { ticket, commitment, clientSeed };
}

/** A Retry-After header's seconds (the lobby sends whole seconds), else undefined. */
function retryAfterSeconds(header: string | null): number | undefined {
  if (!header || !/^\d+$/.test(header.trim())) return undefined;
  return Math.min(Number(header.trim()), MAX_RETRY_AFTER_S);
}

function seatLink(
  gameId: string,
  seat: number,
  token: string,
  kind: string,
  bots: readonly number[],
): string {
  const fragment = new URLSearchParams({ game: gameId, seat: String(seat), kind });
  if (bots.length) fragment.set("bots", bots.join(","));
  fragment.set("token", token);
  return `${location.pathname}#${fragment}`;
}

// --- the lobby ---------------------------------------------------------------------------------

async function lobby(): Promise<void> {
  document.title = "Croupier";
  const kind = h("select", "") as HTMLSelectElement;
  kind.name = "kind";
  for (const [name, k] of Object.entries(KINDS)) kind.append(new Option(k.title, name));
  const preset = h("select", "") as HTMLSelectElement;
  preset.name = "preset";
  const about = h("p", "about");
  about.id = "preset-about";
  preset.setAttribute("aria-describedby", about.id);
  const seats = h("input", "") as HTMLInputElement;
  Object.assign(seats, { type: "number", name: "seats", value: "2" });
  const humans = h("input", "") as HTMLInputElement;
  Object.assign(humans, { type: "number", name: "humans", value: "1", min: "1" });
  const rounds = h("input", "") as HTMLInputElement;
  Object.assign(rounds, { type: "number", name: "rounds", min: "1", placeholder: "the preset's" });
  const roundsField = h("label", "", "Rounds ", rounds);
  const play = h("button", "primary", "Play") as HTMLButtonElement;
  play.type = "submit";
  // Said by screen readers as it changes ("Dealing…", "Game … is dealt.", a refusal).
  const status = h("p", "status");
  status.setAttribute("role", "status");
  const created = h("div", "created");
  let presets: Preset[] = [];

  const describe = () => {
    const chosen = presets.find((p) => p.name === preset.value);
    about.textContent = chosen?.description ?? "";
    const rules = chosen?.rules?.game.value as { minSeats?: number; maxSeats?: number } | undefined;
    const [low, high] = KINDS[kind.value]?.seats ?? [2, 2];
    seats.min = String(rules?.minSeats ?? low);
    seats.max = String(rules?.maxSeats ?? high);
    seats.value = String(
      Math.min(Math.max(Number(seats.value), Number(seats.min)), Number(seats.max)),
    );
    humans.max = seats.value;
  };
  const load = async () => {
    preset.replaceChildren();
    roundsField.hidden = kind.value !== "hoola"; // Koi-Koi's presets are its match lengths
    try {
      presets = (await anonymous.listPresets({ kind: KINDS[kind.value]?.kind })).presets;
    } catch (error) {
      status.textContent = `Cannot list the presets: ${message(error)}`;
      return;
    }
    for (const p of presets)
      preset.append(
        new Option(`${p.name}${p.isDefault ? " (default)" : ""}`, p.name, p.isDefault, p.isDefault),
      );
    describe();
  };
  kind.addEventListener("change", () => void load());
  preset.addEventListener("change", describe);
  seats.addEventListener("change", describe);

  const form = h(
    "form",
    "lobby",
    h("label", "", "Game ", kind),
    h("label", "", "Preset ", preset),
    about,
    h("label", "", "Seats ", seats),
    h("label", "", "People (the others are bots) ", humans),
    roundsField,
    play,
  ) as HTMLFormElement;
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    void create();
  });

  /** A refusal that says when to try again: the time counted down beside a Try again button
   * (pressed early, it just asks again). */
  let countdown: ReturnType<typeof setInterval> | undefined;
  const tryAgainIn = (seconds: number, why: string, reason: string | undefined) => {
    const until = Date.now() + seconds * MS_PER_SECOND;
    const full = reason === LOBBY_FULL;
    const retry = h("button", "retry", "Try again") as HTMLButtonElement;
    retry.type = "button";
    retry.addEventListener("click", () => void create());
    const when = h("span", "retry-in");
    const tick = () => {
      const left = Math.max(0, Math.ceil((until - Date.now()) / MS_PER_SECOND));
      when.textContent = left ? `Try again in ${left} s.` : "You can try again now.";
      if (!left) clearInterval(countdown);
    };
    clearInterval(countdown);
    tick();
    countdown = setInterval(tick, MS_PER_SECOND);
    // The status (a live region) says it once; the countdown beside the button is not announced.
    status.textContent = full
      ? `The lobby is full (${why}): a place frees up when a game ends. Try again in about ${seconds} s.`
      : `The lobby refused (${why}): try again in about ${seconds} s.`;
    created.replaceChildren(h("p", "retry-line", when, " ", retry));
    retry.focus();
  };

  /** The game the lobby asks for, as the fair-deal check holds it (fairdeal.ts): the kind, the
   * seats, this tab's player at seat 0 (the people sit first, the bots after), and the preset's
   * rules as listed with the overrides asked for; none while the presets are not listed. */
  const shownGame = (body: Record<string, unknown>): Expected["game"] => {
    const chosen = presets.find((p) => p.name === preset.value)?.rules;
    const game = KINDS[kind.value]?.kind;
    if (!chosen || game === undefined) return undefined;
    const rules = clone(RulesSchema, chosen);
    if (body.overrides)
      merge(RulesSchema, rules, fromJson(RulesSchema, body.overrides as JsonValue));
    return { kind: game, seats: Number(body.seats), seat: 0, rules: toJson(RulesSchema, rules) };
  };

  const create = async () => {
    clearInterval(countdown);
    const pressed = document.activeElement === play;
    play.disabled = true;
    status.textContent = "Dealing…";
    const body: Record<string, unknown> = {
      kind: kind.value,
      preset: preset.value,
      seats: Number(seats.value),
      humans: Number(humans.value),
    };
    if (!roundsField.hidden && rounds.value)
      body.overrides = { [kind.value]: { rounds: Number(rounds.value) } };
    try {
      // The game as the form shows it, fixed before the seed is drawn: the fair-deal check holds
      // the game to it (docs/shuffle.md, "Everything else the deal depends on").
      const shown = shownGame(body);
      const sealed = await sealShuffle();
      if (sealed !== undefined && !(sealed instanceof Response)) {
        body.seed_ticket = sealed.ticket;
        body.client_seed = sealed.clientSeed;
        status.textContent = `The server sealed its shuffle (sha256 ${sealed.commitment.slice(0, 12)}…) before your seed was drawn. Dealing…`;
      }
      const answer =
        sealed instanceof Response
          ? sealed
          : await fetch("/lobby/games", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify(body),
            });
      if (answer.status === 404 || answer.status === 405) {
        status.textContent =
          "This server has no lobby: start it with `croupier serve --lobby` (make run does), or open a seat link a studio gave you.";
        return;
      }
      const made = (await answer.json()) as {
        game_id: string;
        message?: string;
        reason?: string;
        seats: { seat: number; human: boolean; token?: string }[];
      };
      if (!answer.ok) {
        const wait = retryAfterSeconds(answer.headers.get("retry-after"));
        if (wait === undefined) {
          status.textContent = `The lobby refused: ${made.message ?? answer.statusText}`;
          return;
        }
        // Full (LOBBY_FULL, 503) or too many games from here (RATE_LIMITED, 429): when to try
        // again, counted down, and a button to do it.
        tryAgainIn(wait, made.message ?? answer.statusText, made.reason);
        return;
      }
      status.textContent = `Game ${made.game_id} is dealt.`;
      const bots = made.seats.filter((s) => !s.human).map((s) => s.seat);
      const items = made.seats.map((s) => {
        if (!s.human || !s.token) return h("li", "", `${seatName(s.seat, -1)}: a bot`);
        const link = h(
          "a",
          "seat-link",
          `Play ${seatName(s.seat, -1).toLowerCase()}`,
        ) as HTMLAnchorElement;
        link.href = seatLink(made.game_id, s.seat, s.token, kind.value, bots);
        link.dataset.seat = String(s.seat);
        if (s.seat > 0) link.target = "_blank"; // one seat per tab
        return h("li", "", link, s.seat > 0 ? " (opens a new tab)" : "");
      });
      sessionStorage.setItem(`seats:${made.game_id}`, JSON.stringify(made.seats));
      // What the table's fair-deal part checks the game's first event against (expectedSeal).
      if (sealed !== undefined && !(sealed instanceof Response)) {
        const expected: Expected = {
          commitment: sealed.commitment,
          clientSeed: sealed.clientSeed,
          game: shown,
        };
        sessionStorage.setItem(`sealed:${made.game_id}`, JSON.stringify(expected));
      }
      created.replaceChildren(h("h2", "", "Your seats"), h("ul", "", ...items));
      // The Play button was disabled under the keyboard's focus, which dropped it to the page's
      // start: on to the first seat's link, the next thing to do.
      created.querySelector<HTMLElement>("a.seat-link")?.focus();
    } catch (error) {
      status.textContent = `The lobby could not be reached: ${String(error)}`;
    } finally {
      play.disabled = false;
      // Refused: the keyboard's focus back on the button it was on, not the page's start.
      if (pressed && (!document.activeElement || document.activeElement === document.body))
        play.focus();
    }
  };

  main.replaceChildren(
    h("h1", "", "Croupier"),
    h("p", "", "Play a card game against bots, or with friends one seat per tab."),
    form,
    status,
    created,
  );
  await load();
}

// --- the table ---------------------------------------------------------------------------------

class Table {
  private readonly client: GameClient;
  private view: View | undefined;
  private moves: LegalMove[] = [];
  private toAct: SeatToAct[] = [];
  private version = 0n;
  private finished = false;
  private busy = false;
  /** The link is no good (DEAD_LINK): nothing more is read or sent. */
  private dead = false;
  private refreshing: ReturnType<typeof setTimeout> | undefined;
  private noticeShown: ReturnType<typeof setTimeout> | undefined;
  private reads = 0;
  /** The seat the token is for, as the server says it (its views' `seat`; SPECTATOR for a token
   * with none): unknown (undefined) until the first view. Never the link's `seat=`, which is only
   * what whoever made the link wrote. */
  private seat: number | undefined;
  /** The events so far, kept to be told again once the seat is known (the stream sends them
   * before its first state), and told as they come afterwards. */
  private readonly events: GameEvent[] = [];
  /** Rummy's discard pile under its top card, as the events tell it (the view has only the top). */
  private readonly pile = new DiscardPile();
  private narrator: EventNarrator | undefined;
  private readonly parts = {
    status: h("p", "status"),
    // The seat's own time running short (HURRY_TEXT): empty, and not shown, otherwise.
    hurry: h("p", "hurry"),
    // A refused move, said apart from the status, which every new state rewrites.
    notice: h("p", "notice"),
    seats: h("div", "seats-panel"),
    table: h("section", "table"),
    hand: h("section", "hand"),
    moves: h("section", "moves"),
    settlement: h("section", "last-settlement"),
    final: h("section", "final"),
    // The commitment from the start; the seed revealed and the deal checked at the end.
    fair: h("section", "fair-deal"),
    events: h("ol", "events"),
    // "you are seat 1 · ", once the server said so.
    whoami: h("span", "whoami"),
    others: h("div", "other-seats"),
    // The table and the log beside it: left out for a link that never showed a game.
    columns: h("div", "columns"),
    // What a screen reader says as it comes, unseen: the other seats' moves and one's own, the
    // status line as it changes (whose turn it is). A refused move is the notice's (an alert).
    announcer: h("div", "sr-only announcer"),
  };
  /** The status line last said (say): said again only once it changes. */
  private said = "";
  /** The status line shown, with its error's code: drawn again only once it changes. */
  private shown = "";
  /** The events told so far are the game's history, not news: not announced (learnSeat). */
  private replaying = false;
  /** The keyboard's focus was on a move (or on the moves, focus kept there while none can be
   * pressed): drawing the moves again puts it back (keepFocus), else it falls to the page's start
   * and a keyboard player must tab through the page again after every move. */
  private movesFocused = false;
  /** The label of the move last focused, to focus the same move once it is drawn again. */
  private focusedLabel = "";
  /** The player pressed a move: the moves that follow it (draw, then discard) get the focus. */
  private pressedMove = false;
  /** The move each button plays (buttons are kept while the moves are the same). */
  private readonly buttonMoves = new WeakMap<HTMLElement, LegalMove>();
  /** The token is a studio's or a player's (the server said SEAT_TOKEN_REQUIRED to a seat's
   * stream): the page watches the game as a spectator, with no hand, no moves and no clock of its
   * own, rather than call a link that works "no longer working". */
  private watching = false;
  /** The deadline whose shortness was said (HURRY_TEXT): a screen reader hears it once a step,
   * not every CLOCK_TICK_MS. */
  private hurried = 0n;
  /** The game's shuffle as its events tell it (fairdeal.ts): the commitment from the first event
   * on, the seed once revealed. */
  private readonly sealed = new SealWatcher();
  /** What the fair-deal part shows: "" (nothing yet), the commitment, or the check's stage. */
  private fairShown = "";
  /** Ends the stream being followed, so that a new one opens at once (the network is back). */
  private restream: AbortController | undefined;

  /** `linkSeat`: the seat the link names, if any; the page goes by the token's (`seat`). */
  constructor(
    private readonly gameId: string,
    private readonly linkSeat: number | undefined,
    token: string,
    private readonly kind: string,
    /** The lobby's bot seats, as the link says (a studio's link says none). */
    private readonly bots: ReadonlySet<number> = new Set(),
  ) {
    this.client = asToken(anonymous, token);
  }

  private get title(): string {
    return KINDS[this.kind]?.title ?? "Croupier";
  }

  /** This page's seat for seatName and the like: SPECTATOR while it is not known. */
  private get mine(): number {
    return this.seat ?? SPECTATOR;
  }

  start(): void {
    const title = this.title;
    document.title = title;
    const p = this.parts;
    // The log is not live itself: opening a game would read all of its history out. New events
    // are said by the announcer.
    p.events.setAttribute("aria-label", "Events, newest first");
    p.notice.setAttribute("role", "alert");
    p.announcer.setAttribute("aria-live", "polite");
    p.announcer.setAttribute("aria-relevant", "additions");
    // The moves take the focus while none can be pressed (keepFocus), not the tab order.
    p.moves.tabIndex = -1;
    const heading = (id: string, text: string, part: HTMLElement) => {
      part.setAttribute("aria-labelledby", id); // a named section: a region, a landmark
      const node = h("h2", "", text);
      node.id = id;
      return node;
    };
    main.replaceChildren(
      h(
        "header",
        "",
        h("h1", "", title),
        h("p", "game-id", `Game ${this.gameId} · `, p.whoami, this.newGame()),
      ),
      p.status,
      p.hurry,
      p.notice,
      p.columns,
      // Last: one reading the page through meets the status line first, and this at the end.
      p.announcer,
    );
    const log = h("aside", "log");
    log.append(heading("log-heading", "What happens", log), p.events, p.others);
    p.columns.append(
      h(
        "div",
        "play",
        p.seats,
        heading("table-heading", "Table", p.table),
        p.table,
        heading("hand-heading", "Your hand", p.hand),
        p.hand,
        heading("moves-heading", "Your moves", p.moves),
        p.moves,
        p.settlement,
        p.final,
        heading("fair-heading", "Fair deal", p.fair),
        p.fair,
      ),
      log,
    );
    // Where the keyboard's focus is, for keepFocus: on the moves, or not.
    document.addEventListener("focusin", (event) => {
      const target = event.target as Node | null;
      this.movesFocused = Boolean(target && p.moves.contains(target));
      if (target instanceof HTMLButtonElement && this.movesFocused)
        this.focusedLabel = target.dataset.label ?? "";
    });
    // A click elsewhere leaves the moves, even one on nothing that takes the focus.
    document.addEventListener("pointerdown", (event) => {
      if (!p.moves.contains(event.target as Node)) this.movesFocused = false;
    });
    // The stream's first message is every event so far with the seat's state after them: the
    // page reads nothing else as it opens, and says so until it comes (or the stream breaks:
    // follow's onRetry says that).
    this.say(CONNECTING_TEXT);
    void this.follow();
    setInterval(() => this.drawSeats(), CLOCK_TICK_MS);
    // A phone loses its network in a lift and finds it again: said at once, not after the
    // stream's watchdog gives up a dead connection; and once it is back, the game is read again
    // at once, not after the reconnection's wait (up to 30 s, while a turn clock may be running).
    window.addEventListener("offline", () => {
      if (!this.dead && !this.finished) this.say(OFFLINE_TEXT);
    });
    window.addEventListener("online", () => {
      if (this.dead || this.finished) return;
      this.say(CONNECTING_TEXT);
      this.restream?.abort();
    });
  }

  private newGame(text = "new game"): HTMLElement {
    const a = h("a", "", text) as HTMLAnchorElement;
    a.href = location.pathname;
    return a;
  }

  /** Links to the other human seats of a lobby game this browser created. */
  private otherSeats(): HTMLElement {
    const known = JSON.parse(sessionStorage.getItem(`seats:${this.gameId}`) ?? "[]") as {
      seat: number;
      token?: string;
    }[];
    const links = known
      .filter((s) => s.token && s.seat !== this.seat)
      .map((s) => {
        const a = h("a", "seat-link", `Open seat ${s.seat}`) as HTMLAnchorElement;
        a.href = seatLink(this.gameId, s.seat, s.token ?? "", this.kind, [...this.bots]);
        a.target = "_blank";
        return h("li", "", a);
      });
    return links.length
      ? h("div", "", h("h2", "", "Other seats"), h("ul", "", ...links))
      : h("div");
  }

  /** The events as this seat may see them, live, each batch followed by the seat's state (its
   * view, legal moves and who is to act: `include`), pushed, so that a move is one call
   * (SubmitCommand) and nothing is polled. followGame reopens a stream that breaks, or that goes
   * silent though heartbeats were asked for, after the last event, with a growing wait; it throws
   * only what no new stream can mend: the link itself is no good. */
  private async follow(): Promise<void> {
    for (;;) {
      const restream = new AbortController();
      this.restream = restream;
      try {
        for await (const message of followGame(this.client, {
          gameId: this.gameId,
          // After the events the page has: a new stream (back online, or now as a spectator)
          // sends only what is new, then the state.
          afterVersion: this.events.at(-1)?.version ?? 0n,
          // A spectator's state has no legal moves: the server refuses them to a token with no seat.
          include: { view: true, legalMoves: !this.watching, toAct: true },
          heartbeatS: heartbeatSeconds(),
          signal: restream.signal,
          onRetry: (error, _attempt, waitMs) =>
            // The code only when the server answered (a network's failure has none worth showing).
            this.say(
              navigator.onLine
                ? `The connection to the server is lost: trying again in ${Math.ceil(waitMs / MS_PER_SECOND)} s…`
                : OFFLINE_TEXT,
              error.reason ? error : undefined,
            ),
        })) {
          if (message.case === "event") {
            serverClock.observe(message.value.recordedAtMs);
            this.logEvent(message.value);
          } else {
            this.reads++; // any read in flight is older than this state
            this.showIfNewer(message.value);
          }
        }
      } catch (thrown) {
        const error = decodeError(thrown);
        if (error.reason === SEAT_TOKEN_REQUIRED && !this.watching) {
          this.watching = true; // a studio's or a player's token: it watches
          continue;
        }
        this.deadLink(error);
        return;
      }
      // Ended by the page (restream) to open a new one; else the game is over.
      if (!restream.signal.aborted) return;
    }
  }

  /** The status line: what the page waits for, or what went wrong (its code small); said by
   * screen readers when it changes (not while a move is being sent: its answer follows). */
  private say(text: string, error?: CroupierError): void {
    const tag = error ? codeTag(error) : undefined;
    const shown = `${text}\n${tag?.textContent ?? ""}`;
    if (shown === this.shown) return; // the same words: not drawn again, not said again
    this.shown = shown;
    this.parts.status.replaceChildren(text, ...(tag ? [" ", tag] : []));
    if (text !== this.said && text !== SENDING_TEXT) this.announce(text);
    this.said = text;
  }

  /** Words for screen readers to say now (the announcer, a polite live region). */
  private announce(text: string): void {
    const announcer = this.parts.announcer;
    announcer.append(h("p", "", spoken(text)));
    while (announcer.childElementCount > ANNOUNCED_KEPT) announcer.firstElementChild?.remove();
  }

  /** A refused move, shown until the player moves again, the game ends, or NOTICE_MS pass. */
  private notify(text: string, error: CroupierError): void {
    clearTimeout(this.noticeShown);
    this.parts.notice.replaceChildren(text, " ", codeTag(error));
    this.noticeShown = setTimeout(() => this.clearNotice(), NOTICE_MS);
  }

  private clearNotice(): void {
    clearTimeout(this.noticeShown);
    this.parts.notice.replaceChildren();
  }

  /** The link will never work (DEAD_LINK): say so in plain words and stop, rather than ask the
   * server again and again for what it will always refuse. */
  private deadLink(error: CroupierError): void {
    this.dead = true;
    this.moves = [];
    this.clearNotice();
    this.say(DEAD_LINK_TEXT, error);
    main.dataset.dead = "true"; // for the tests
    const offer = h(
      "p",
      "waiting",
      "Nothing to play with this link. ",
      this.newGame("Start a new game"),
      ".",
    );
    // A game shown before stays as it was last seen; an empty table is not shown at all.
    this.parts.moves.classList.remove("has-moves");
    if (this.view) this.parts.moves.replaceChildren(offer);
    else this.parts.columns.replaceChildren(offer);
  }

  /** An event for the log: told now if the seat is known, else once it is (learnSeat). */
  private logEvent(event: GameEvent): void {
    this.events.push(event);
    this.pile.add(event);
    this.sealed.add(event);
    this.drawFairDeal();
    if (this.narrator) this.tell(this.narrator, event);
  }

  /** One line of the log, newest first; `data-seat` is the seat whose command made the event
   * (for the tests), the line's words say whom it is about. */
  private tell(narrator: EventNarrator, event: GameEvent): void {
    const line = narrator.describe(event);
    const classes = [line.about === this.mine ? "mine" : "", line.forced ? "forced" : ""];
    const item = h(
      "li",
      classes.filter(Boolean).join(" "),
      h("span", "version", `#${event.version}`),
      " ",
      ...readable(line.text),
    );
    item.dataset.version = String(event.version);
    if (event.seat !== undefined) item.dataset.seat = String(event.seat);
    // A move told as it comes is news, said by the announcer and marked so (data-live); the game
    // so far, told as the page opens, is not.
    if (!this.replaying) item.dataset.live = "true";
    this.parts.events.prepend(item);
    if (!this.replaying) this.announce(line.text);
  }

  /** The seat a view is for, which is the token's: the server's word, whatever the link says.
   * The first view tells it (and the events so far, held until then, are told); it never changes
   * after, the token being the same. */
  private learnSeat(view: View): void {
    const seat = viewerSeat(view) ?? SPECTATOR;
    if (seat === this.seat) return;
    this.seat = seat;
    const p = this.parts;
    document.title = `${this.title} · ${seat === SPECTATOR ? "watching" : `seat ${seat}`}`;
    main.dataset.seat = String(seat); // for the tests
    const linked = this.linkSeat;
    p.whoami.replaceChildren(
      seat === SPECTATOR ? "you are watching" : `you are seat ${seat}`,
      ...(linked !== undefined && linked !== seat
        ? [" ", h("small", "link-seat", `(the link says seat ${linked}: its token says otherwise)`)]
        : []),
      " · ",
    );
    p.others.replaceChildren(this.otherSeats());
    // A spectator holds no hand: no empty "Your hand" ("no cards") as if it held one.
    p.hand.hidden = seat === SPECTATOR;
    const handHeading = document.getElementById("hand-heading");
    if (handHeading) handHeading.hidden = seat === SPECTATOR;
    const narrator = new EventNarrator(seat);
    this.narrator = narrator;
    p.events.replaceChildren();
    this.replaying = true; // the game so far: in the log, not said
    for (const event of this.events) this.tell(narrator, event);
    this.replaying = false;
  }

  private soon(): void {
    clearTimeout(this.refreshing);
    this.refreshing = setTimeout(() => void this.refresh(), REFRESH_DELAY_MS);
  }

  private async refresh(): Promise<void> {
    if (this.dead) return;
    const read = ++this.reads;
    try {
      const [view, legal] = await Promise.all([
        this.client.getView({ gameId: this.gameId }),
        // A spectator has no moves (and the server lists them to a seat only).
        this.watching ? undefined : this.client.listLegalMoves({ gameId: this.gameId }),
      ]);
      if (read !== this.reads || view.version < this.version) return; // a newer read answered
      this.show(
        view.view,
        legal?.moves ?? [],
        view.toAct,
        legal && legal.version < view.version ? legal.version : view.version,
        view.finished,
      );
      // The game moved between the two reads.
      if (legal && legal.version !== view.version) this.soon();
    } catch (thrown) {
      const error = decodeError(thrown);
      if (DEAD_LINK.has(error.code)) this.deadLink(error);
      // Offline: said so, as the stream says it (the page reads the game again once back online).
      else if (!navigator.onLine) this.say(OFFLINE_TEXT);
      else this.say("Cannot read the game now: the next move or event will show it.", error);
    }
  }

  /** A state pushed by the stream, or a move's answer: they race each other, and the page
   * never goes back. Whether it was shown. */
  private showIfNewer(state: {
    view?: View;
    legalMoves: LegalMove[];
    toAct: SeatToAct[];
    version: bigint;
    finished: boolean;
  }): boolean {
    if (state.version < this.version || this.dead) return false;
    this.show(state.view, state.legalMoves, state.toAct, state.version, state.finished);
    return true;
  }

  private show(
    view: View | undefined,
    moves: LegalMove[],
    toAct: SeatToAct[],
    version: bigint,
    finished: boolean,
  ): void {
    this.view = view;
    this.moves = moves;
    this.toAct = toAct;
    this.version = version;
    main.dataset.version = String(version); // for the tests: what the page shows is as of this
    const p = this.parts;
    if (!view) return;
    this.learnSeat(view);
    // Finished first: the moves, the status and the final settlement all read it.
    const ended = finished && !this.finished;
    this.finished = finished;
    this.drawStatus();
    // Changed in place (morph), so that a screen reader reading them keeps its place.
    const rummy = view.game.case === "rummy" ? view.game.value : undefined;
    const under = rummy && this.pile.under(rummy.discardTop?.code, rummy.discardCount);
    morph(p.table, h("section", "", tableOf(view, under)));
    morph(p.hand, h("section", "", handOf(view)));
    this.drawSeats();
    this.drawMoves();
    const last = lastSettlement(view);
    const hands = roundHandsOf(view, this.mine);
    morph(
      p.settlement,
      h(
        "section",
        "",
        ...(last ? [settlementOf(`Round ${last.round || ""}`.trim(), last, this.mine)] : []),
        ...(hands ? [hands] : []),
      ),
    );
    if (ended) {
      this.clearNotice(); // no move can be played any more: a refusal is moot
      void this.showFinal();
    }
    this.drawFairDeal();
  }

  /** The status line as the state shown says it; but while a move is on its way (busy), that it
   * is: a state the stream pushes meanwhile does not make the greyed-out buttons playable. */
  private drawStatus(): void {
    if (this.busy) this.say(SENDING_TEXT);
    else this.say(this.finished ? "The game is over." : this.waitingFor(this.toAct));
  }

  /** The moves and the status drawn again from the state shown, once a move is no longer on its
   * way (play): its answer older than a state the stream showed meanwhile, or its refusal, would
   * otherwise leave them as they were while it was (buttons greyed out, SENDING_TEXT) until the
   * next state, which may be long in coming (a refusal's own read may fail too). */
  private redraw(): void {
    if (this.dead || !this.view) return;
    this.drawMoves();
    this.drawStatus();
  }

  private waitingFor(toAct: SeatToAct[]): string {
    // An away seat's only move is to come back; the seat the game waits on may be another.
    if (toAct.some((t) => t.seat === this.seat && t.away))
      return "You are away: the game plays your turns for you until you press Come back.";
    // Between rounds any seat may deal the next one: the seat on the clock for it may be a bot,
    // which never deals (the lobby's), or a person who has not yet.
    const waited = toAct.filter((t) => t.turn).map((t) => t.seat);
    const kinds = this.moves.map(moveKind);
    if (kinds.some((k) => BETWEEN_ROUNDS_MOVES.has(k)) && !waited.includes(this.mine))
      return betweenRoundsStatus(
        waited,
        this.bots,
        this.mine,
        kinds.includes("nextHand") ? "hand" : "round",
      );
    // The seats the game waits on (`turn`); the others may act, out of turn, but need not.
    return statusFor(toAct, this.seat, this.moves.length, this.mine);
  }

  /** The seats with their clocks, every CLOCK_TICK_MS: counted down against the server's time
   * (the deadlines are on its clock), not the browser's (servertime.ts). */
  private drawSeats(): void {
    if (!this.view) return;
    const now = serverClock.now();
    morph(this.parts.seats, h("div", "", seatsPanel(this.view, this.toAct, this.mine, now)));
    this.drawHurry(this.view, now);
  }

  /** The seat's own time running short (timeIsShort), while the game waits on it: shown in a line
   * that stays in sight however far down the page the player is (on a phone the seats' clocks are
   * above the fold, the moves at its foot), counted down with the clocks; said to screen readers
   * once a step (the live region would otherwise say it every CLOCK_TICK_MS). Without it a
   * player learnt only from the time-out that the time was gone. */
  private drawHurry(view: View, now: number): void {
    const mine = this.toAct.find((t) => t.seat === this.seat && !t.away && t.deadlineMs > 0n);
    const left = mine ? Number(mine.deadlineMs) - now : 0;
    if (!mine || this.finished || this.dead || !timeIsShort(left, stepTimeOf(view, mine))) {
      if (this.parts.hurry.textContent) this.parts.hurry.replaceChildren();
      return;
    }
    this.parts.hurry.textContent = `${HURRY_TEXT} ${clock(left)} left to move.`;
    if (this.hurried === mine.deadlineMs) return;
    this.hurried = mine.deadlineMs;
    const seconds = Math.max(0, Math.ceil(left / MS_PER_SECOND));
    this.announce(`${HURRY_TEXT} ${seconds} ${seconds === 1 ? "second" : "seconds"} left to move.`);
  }

  private drawMoves(): void {
    const p = this.parts;
    const shown = [...p.moves.querySelectorAll<HTMLButtonElement>("button.move")];
    if (
      shown.length &&
      shown.length === this.moves.length &&
      shown.every((button, i) => button.dataset.label === this.moves[i]?.label)
    ) {
      // The same moves: the same buttons (the keyboard's focus stays on its own), each playing
      // its move as of this state.
      shown.forEach((button, i) => {
        button.disabled = this.busy;
        const move = this.moves[i];
        if (move) this.buttonMoves.set(button, move);
      });
      this.keepFocus(shown);
      return;
    }
    const buttons = this.moves.map((move) => {
      const chosen = chosenMove(move);
      const kind = chosen?.case ?? "";
      // Its cards said in words ("Discard queen of diamonds"), not as "Q" and a symbol.
      const button = h(
        "button",
        `move ${kind}`,
        ...readable(prettyLabel(move.label)),
      ) as HTMLButtonElement;
      button.dataset.move = kind;
      // The card the move names, if one: for scripts and tests that pick moves (play.mjs).
      if (typeof chosen?.value?.card === "string") button.dataset.card = chosen.value.card;
      button.dataset.label = move.label;
      button.disabled = this.busy;
      this.buttonMoves.set(button, move);
      button.addEventListener("click", () => void this.play(this.buttonMoves.get(button) ?? move));
      return button;
    });
    const waiting = this.finished
      ? "None: the game is over."
      : this.watching
        ? "None: you are watching the game."
        : "Nothing to do now: the other seats are playing.";
    p.moves.replaceChildren(...(buttons.length ? buttons : [h("p", "waiting", waiting)]));
    // In sight on a phone while there is something to press (style.css).
    p.moves.classList.toggle("has-moves", buttons.length > 0);
    this.keepFocus(buttons);
  }

  /** The keyboard's focus, if it was on a move, kept on the moves as they are drawn again: on
   * the same move if it is still offered; after the player's own move, on the same or the first
   * of the moves that follow it (the discard after the draw; the move refused, to try again);
   * else on the moves' section itself (not in the tab order: Tab goes on to the first move).
   * Focus is never taken from elsewhere, nor moved off the section when the player's turn comes:
   * "Your move." is said, and Tab finds it; a move pressed by mistake is worse than a Tab. */
  private keepFocus(buttons: HTMLButtonElement[]): void {
    const moves = this.parts.moves;
    const active = document.activeElement;
    // Focus on a move that this drawing removed (or disabled: Chromium drops it) is lost.
    const lost = !active || active === document.body || !active.isConnected;
    if (!this.movesFocused || !(lost || moves.contains(active))) return;
    const onButton = active instanceof HTMLButtonElement && moves.contains(active);
    if (lost || onButton || this.pressedMove) {
      const playable = buttons.filter((b) => !b.disabled);
      const same = playable.find((b) => b.dataset.label === this.focusedLabel);
      let target: HTMLElement | undefined = same ?? (this.pressedMove ? playable[0] : undefined);
      if (!target && !(onButton && !active.disabled)) target = moves;
      if (target && target !== active) target.focus();
    }
    if (!this.busy) this.pressedMove = false; // its answer is shown: done with it
  }

  private async play(move: LegalMove): Promise<void> {
    if (this.busy || this.dead) return;
    this.clearNotice(); // the player acts again: the last refusal is moot
    this.pressedMove = true;
    this.busy = true;
    this.drawMoves();
    this.drawStatus();
    main.dataset.busy = "true";
    try {
      const answer = await submit(this.client, {
        gameId: this.gameId,
        expectedVersion: this.version,
        command: move.command,
        include: { view: true, legalMoves: true, toAct: true },
      });
      this.reads++; // any read in flight is older than this answer
      for (const event of answer.events) serverClock.observe(event.recordedAtMs);
      // For the tests: the first event of this move, which the other tabs must show live.
      main.dataset.played = String(answer.events[0]?.version ?? "");
      this.busy = false;
      // The parts are as of stateVersion (past an away seat's turn played right after ours).
      const version = answer.stateVersion || answer.version;
      if (!this.showIfNewer({ ...answer, version })) this.redraw();
    } catch (thrown) {
      const error = decodeError(thrown);
      this.busy = false;
      main.dataset.played = "";
      if (LINK_REFUSED.has(error.code)) {
        this.deadLink(error);
      } else {
        // The moves playable again meanwhile: a lost connection's refusal asks to try again.
        this.redraw();
        // Said apart from the status, so that the refresh that follows does not wipe it.
        this.notify(refusal(error), error);
        void this.refresh();
      }
    } finally {
      // For the tests: how many moves this page has sent, and answered.
      main.dataset.plays = String(Number(main.dataset.plays ?? 0) + 1);
      main.dataset.busy = "false";
    }
  }

  /** What the page was shown of the game's shuffle before the game existed: the commit-first
   * flow's commitment and the player's own seed, which the lobby keeps here by game id (README,
   * "In a browser"); nothing for a link opened in another browser, or a studio's link. */
  private expectedSeal(): Expected {
    const kept = sessionStorage.getItem(`sealed:${this.gameId}`);
    return kept ? (JSON.parse(kept) as Expected) : {};
  }

  /** The fair-deal part: the commitment as soon as the first event tells it (shortened, the whole
   * one on demand), then, once the game is over and its seed revealed, the check of the deal
   * (fairdeal.ts) in a sentence: what matched, or what did not. */
  private drawFairDeal(): void {
    const record = this.sealed;
    if (!record.commitment || this.seat === undefined) return;
    const stage = record.serverSeed && this.finished ? "check" : "sealed";
    if (stage === this.fairShown) return;
    this.fairShown = stage;
    const fair = this.parts.fair;
    const whole = (summary: string, hex: string) =>
      h("details", "hex", h("summary", "", summary), h("code", "", hex));
    const commitment = [
      h(
        "p",
        "",
        "Before the first card the server sealed its shuffle: its secret seed's fingerprint (sha256) is ",
        h("code", "commitment", shortHex(record.commitment)),
        ".",
      ),
      whole("The whole fingerprint (commitment)", record.commitment),
    ];
    if (stage === "sealed") {
      fair.dataset.check = "sealed";
      fair.replaceChildren(
        ...commitment,
        h(
          "p",
          "",
          "When the game is over the seed is revealed, and this page checks the deal with it.",
        ),
      );
      return;
    }
    const verdict = h("p", "verdict", "Checking the deal against the sealed seed…");
    fair.dataset.check = "checking";
    fair.replaceChildren(...commitment, verdict, whole("The revealed seed", record.serverSeed));
    const subtle = shuffleCrypto();
    if (!subtle) {
      fair.dataset.check = "unavailable";
      verdict.textContent =
        "This page cannot check the deal here: browsers allow the cryptography it needs on https and localhost pages only. The game's timeline shows the server's own check.";
      return;
    }
    // The seat's own copy of the events: its own hands, nobody else's.
    void checkSeatDeal(
      this.events,
      this.watching ? undefined : this.seat,
      this.expectedSeal(),
      subtle,
    )
      .then((check) => {
        fair.dataset.check = check.ok ? "passed" : "failed";
        verdict.replaceChildren(
          h("strong", "", check.ok ? "Checked: " : "Check failed: "),
          check.text,
        );
        verdict.after(h("ul", "checked", ...check.details.map((line) => h("li", "", line))));
        this.announce(`Fair deal: ${check.text}`);
      })
      .catch((error: unknown) => {
        fair.dataset.check = "failed";
        verdict.textContent = `The deal could not be checked: ${String(error)}`;
      });
  }

  private async showFinal(): Promise<void> {
    let final;
    try {
      final = (await this.client.getSettlement({ gameId: this.gameId, final: true })).settlement;
    } catch (error) {
      this.parts.final.replaceChildren(h("p", "", `No final settlement: ${message(error)}`));
      return;
    }
    const timeline = h(
      "a",
      "timeline",
      "The whole game, turn by turn (replay timeline)",
    ) as HTMLAnchorElement;
    timeline.href = `/games/${encodeURIComponent(this.gameId)}/timeline`;
    timeline.target = "_blank";
    this.parts.final.replaceChildren(
      h("h2", "", "Game over"),
      ...(final ? [settlementOf("Final settlement", final, this.mine)] : []),
      h("p", "", timeline),
      h("p", "", this.newGame()),
    );
    this.parts.final.dataset.done = "true";
  }
}

// --- start -------------------------------------------------------------------------------------

function route(): void {
  const params = new URLSearchParams(location.hash.slice(1));
  const gameId = params.get("game");
  const token = params.get("token");
  if (gameId && token) {
    // The link's seat, if any, is only compared with the token's, which the server tells.
    const seat = params.get("seat");
    const linkSeat = seat !== null && /^\d+$/.test(seat) ? Number(seat) : undefined;
    const bots = (params.get("bots") ?? "").split(",").filter((b) => /^\d+$/.test(b));
    new Table(gameId, linkSeat, token, params.get("kind") ?? "", new Set(bots.map(Number))).start();
  } else {
    void lobby();
  }
}
window.addEventListener("hashchange", () => location.reload());
route();
// Exported for the tests' and the reader's sake only.
export { clock, seatsOf, words };
