// Croupier's reference web client. Without a seat in the URL it is the lobby: pick a game and a
// preset, and the server's lobby (croupier serve --lobby) creates a game with bots at the other
// seats and hands back one link per human seat, the seat token in the link's fragment (#…),
// which browsers never send to a server. With a seat, it is the table: the seat's view, its legal
// moves as buttons, the other seats' moves live over StreamEvents, the clocks, the settlements.
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import {
  asToken,
  bearer,
  decodeError,
  decodeErrors,
  GameKind,
  GameService,
  submit,
  type GameClient,
  type GameEvent,
  type LegalMove,
  type Preset,
  type SeatToAct,
  type View,
} from "@croupier/client";
import { prettyLabel } from "./cards.js";
import {
  clock,
  describeEvent,
  h,
  handOf,
  lastSettlement,
  seatName,
  seatsOf,
  seatsPanel,
  settlementOf,
  tableOf,
  words,
} from "./render.js";

const KINDS: Record<string, { kind: GameKind; title: string; seats: [number, number] }> = {
  hoola: { kind: GameKind.HOOLA, title: "Korean Hoola", seats: [2, 5] },
  koikoi: { kind: GameKind.KOIKOI, title: "Hanafuda Koi-Koi", seats: [2, 2] },
  gin: { kind: GameKind.GIN, title: "Gin Rummy", seats: [2, 2] },
  rummy: { kind: GameKind.RUMMY, title: "Rummy with jokers", seats: [2, 6] },
};
/** Coalesce the refreshes that a burst of events asks for. */
const REFRESH_DELAY_MS = 30;
/** Wait before reopening a broken event stream. */
const RECONNECT_MS = 1000;
const CLOCK_TICK_MS = 500;

const transport = createConnectTransport({
  baseUrl: location.origin,
  useBinaryFormat: true,
  // Errors decoded (CroupierError); each seat's token sent as `authorization: Bearer`.
  interceptors: [decodeErrors, bearer()],
});
const anonymous: GameClient = createClient(GameService, transport);
const main = document.getElementById("app") as HTMLElement;

function message(error: unknown): string {
  const e = decodeError(error);
  return e.reason ? `${e.rawMessage} (${e.reason})` : e.rawMessage;
}

function seatLink(gameId: string, seat: number, token: string, kind: string): string {
  const fragment = new URLSearchParams({ game: gameId, seat: String(seat), kind, token });
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
  const seats = h("input", "") as HTMLInputElement;
  Object.assign(seats, { type: "number", name: "seats", value: "2" });
  const humans = h("input", "") as HTMLInputElement;
  Object.assign(humans, { type: "number", name: "humans", value: "1", min: "1" });
  const rounds = h("input", "") as HTMLInputElement;
  Object.assign(rounds, { type: "number", name: "rounds", min: "1", placeholder: "the preset's" });
  const roundsField = h("label", "", "Rounds ", rounds);
  const play = h("button", "primary", "Play") as HTMLButtonElement;
  play.type = "submit";
  const status = h("p", "status");
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

  const create = async () => {
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
      const answer = await fetch("/lobby/games", {
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
        seats: { seat: number; human: boolean; token?: string }[];
      };
      if (!answer.ok) {
        status.textContent = `The lobby refused: ${made.message ?? answer.statusText}`;
        return;
      }
      status.textContent = `Game ${made.game_id} is dealt.`;
      const items = made.seats.map((s) => {
        if (!s.human || !s.token) return h("li", "", `${seatName(s.seat, -1)}: a bot`);
        const link = h(
          "a",
          "seat-link",
          `Play ${seatName(s.seat, -1).toLowerCase()}`,
        ) as HTMLAnchorElement;
        link.href = seatLink(made.game_id, s.seat, s.token, kind.value);
        link.dataset.seat = String(s.seat);
        if (s.seat > 0) link.target = "_blank"; // one seat per tab
        return h("li", "", link, s.seat > 0 ? " (opens a new tab)" : "");
      });
      sessionStorage.setItem(`seats:${made.game_id}`, JSON.stringify(made.seats));
      created.replaceChildren(h("h2", "", "Your seats"), h("ul", "", ...items));
    } catch (error) {
      status.textContent = `The lobby could not be reached: ${String(error)}`;
    } finally {
      play.disabled = false;
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
  private refreshing: ReturnType<typeof setTimeout> | undefined;
  private reads = 0;
  private readonly parts = {
    status: h("p", "status"),
    seats: h("div", "seats-panel"),
    table: h("section", "table"),
    hand: h("section", "hand"),
    moves: h("section", "moves"),
    settlement: h("section", "last-settlement"),
    final: h("section", "final"),
    events: h("ol", "events"),
  };

  constructor(
    private readonly gameId: string,
    private readonly seat: number,
    token: string,
    private readonly kind: string,
  ) {
    this.client = asToken(anonymous, token);
  }

  start(): void {
    const title = KINDS[this.kind]?.title ?? "Croupier";
    document.title = `${title} · seat ${this.seat}`;
    const p = this.parts;
    p.events.setAttribute("aria-live", "polite");
    main.replaceChildren(
      h(
        "header",
        "",
        h("h1", "", title),
        h("p", "game-id", `Game ${this.gameId} · you are seat ${this.seat} · `, this.newGame()),
      ),
      p.status,
      h(
        "div",
        "columns",
        h(
          "div",
          "play",
          p.seats,
          h("h2", "", "Table"),
          p.table,
          h("h2", "", "Your hand"),
          p.hand,
          h("h2", "", "Your moves"),
          p.moves,
          p.settlement,
          p.final,
        ),
        h("aside", "log", h("h2", "", "What happens"), p.events, this.otherSeats()),
      ),
    );
    // The stream's first message is every event so far with the seat's state after them: the
    // page reads nothing else as it opens.
    void this.follow();
    setInterval(() => this.drawSeats(), CLOCK_TICK_MS);
  }

  private newGame(): HTMLElement {
    const a = h("a", "", "new game") as HTMLAnchorElement;
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
        a.href = seatLink(this.gameId, s.seat, s.token ?? "", this.kind);
        a.target = "_blank";
        return h("li", "", a);
      });
    return links.length
      ? h("div", "", h("h2", "", "Other seats"), h("ul", "", ...links))
      : h("div");
  }

  /** The events as this seat may see them, live, each batch with the seat's state after it
   * (its view, legal moves and who is to act: `include`, `batched`), pushed, so that a move is
   * one call (SubmitCommand) and nothing is polled; reopened after a break, from the last
   * event. */
  private async follow(): Promise<void> {
    let after = 0n;
    for (;;) {
      try {
        for await (const answer of this.client.streamEvents({
          gameId: this.gameId,
          afterVersion: after,
          include: { view: true, legalMoves: true, toAct: true },
          batched: true,
        })) {
          const batch = answer.batch;
          if (!batch) continue;
          for (const event of batch.events) {
            after = event.version;
            this.logEvent(event);
          }
          if (batch.state) {
            this.reads++; // any read in flight is older than this state
            this.showIfNewer(batch.state);
          }
        }
        return; // the game is over (its last state came with its last events): the stream ended
      } catch (error) {
        this.parts.status.textContent = `The event stream broke (${message(error)}); reconnecting…`;
        await new Promise((resolve) => setTimeout(resolve, RECONNECT_MS));
      }
    }
  }

  private logEvent(event: GameEvent): void {
    const item = h("li", event.seat === this.seat ? "mine" : "", describeEvent(event, this.seat));
    item.dataset.version = String(event.version);
    if (event.seat !== undefined) item.dataset.seat = String(event.seat);
    this.parts.events.prepend(item);
  }

  private soon(): void {
    clearTimeout(this.refreshing);
    this.refreshing = setTimeout(() => void this.refresh(), REFRESH_DELAY_MS);
  }

  private async refresh(): Promise<void> {
    const read = ++this.reads;
    try {
      const [view, legal] = await Promise.all([
        this.client.getView({ gameId: this.gameId }),
        this.client.listLegalMoves({ gameId: this.gameId }),
      ]);
      if (read !== this.reads || view.version < this.version) return; // a newer read answered
      this.show(
        view.view,
        legal.moves,
        view.toAct,
        legal.version < view.version ? legal.version : view.version,
        view.finished,
      );
      if (legal.version !== view.version) this.soon(); // the game moved between the two reads
    } catch (error) {
      this.parts.status.textContent = `Cannot read the game: ${message(error)}`;
    }
  }

  /** A state pushed by the stream, or a move's answer: they race each other, and the page
   * never goes back. */
  private showIfNewer(state: {
    view?: View;
    legalMoves: LegalMove[];
    toAct: SeatToAct[];
    version: bigint;
    finished: boolean;
  }): void {
    if (state.version < this.version) return;
    this.show(state.view, state.legalMoves, state.toAct, state.version, state.finished);
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
    p.status.textContent = finished ? "The game is over." : this.waitingFor(toAct);
    p.table.replaceChildren(tableOf(view));
    p.hand.replaceChildren(handOf(view));
    this.drawSeats();
    this.drawMoves();
    const last = lastSettlement(view);
    p.settlement.replaceChildren(
      ...(last ? [settlementOf(`Round ${last.round || ""}`.trim(), last, this.seat)] : []),
    );
    if (finished && !this.finished) void this.showFinal();
    this.finished = finished;
  }

  private waitingFor(toAct: SeatToAct[]): string {
    if (this.moves.length) return "Your move.";
    if (!toAct.length) return "Waiting…";
    // The seats the game waits on (`turn`); the others may act, out of turn, but need not.
    const waited = toAct.filter((t) => t.turn);
    return `Waiting for ${(waited.length ? waited : toAct).map((t) => seatName(t.seat, this.seat)).join(", ")}…`;
  }

  private drawSeats(): void {
    if (this.view)
      this.parts.seats.replaceChildren(seatsPanel(this.view, this.toAct, this.seat, Date.now()));
  }

  private drawMoves(): void {
    const buttons = this.moves.map((move) => {
      const game = move.command?.game;
      const chosen = (
        game?.value as { move?: { case?: string; value?: { card?: unknown } } } | undefined
      )?.move;
      const kind = chosen?.case ?? "";
      const button = h("button", `move ${kind}`, prettyLabel(move.label)) as HTMLButtonElement;
      button.dataset.move = kind;
      // The card the move names, if one: for scripts and tests that pick moves (play.mjs).
      if (typeof chosen?.value?.card === "string") button.dataset.card = chosen.value.card;
      button.dataset.label = move.label;
      button.disabled = this.busy;
      button.addEventListener("click", () => void this.play(move));
      return button;
    });
    const waiting = this.finished
      ? "The game is over."
      : "Nothing to do now: the other seats are playing.";
    this.parts.moves.replaceChildren(...(buttons.length ? buttons : [h("p", "waiting", waiting)]));
  }

  private async play(move: LegalMove): Promise<void> {
    if (this.busy) return;
    this.busy = true;
    this.drawMoves();
    main.dataset.busy = "true";
    try {
      const answer = await submit(this.client, {
        gameId: this.gameId,
        expectedVersion: this.version,
        command: move.command,
        include: { view: true, legalMoves: true, toAct: true },
      });
      this.reads++; // any read in flight is older than this answer
      // For the tests: the first event of this move, which the other tabs must show live.
      main.dataset.played = String(answer.events[0]?.version ?? "");
      this.busy = false;
      // The parts are as of stateVersion (past an away seat's turn played right after ours).
      const version = answer.stateVersion || answer.version;
      this.showIfNewer({ ...answer, version });
    } catch (error) {
      this.busy = false;
      main.dataset.played = "";
      this.parts.status.textContent = `Not played: ${message(error)}`;
      void this.refresh();
    } finally {
      // For the tests: how many moves this page has sent, and answered.
      main.dataset.plays = String(Number(main.dataset.plays ?? 0) + 1);
      main.dataset.busy = "false";
    }
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
      ...(final ? [settlementOf("Final settlement", final, this.seat)] : []),
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
    new Table(gameId, Number(params.get("seat") ?? 0), token, params.get("kind") ?? "").start();
  } else {
    void lobby();
  }
}
window.addEventListener("hashchange", () => location.reload());
route();
// Exported for the tests' and the reader's sake only.
export { clock, seatsOf, words };
