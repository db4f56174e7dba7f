// "Fair deal": what the page shows of its game's shuffle, and what it holds the game to. The check
// itself is @croupier/client's checkDeal (docs/shuffle.md): the seed revealed at the end against
// the commitment from the game's first event, every deal the seat saw against the deal the seeds
// derive, card by card, and the game against what the lobby's tab was shown before it existed.
// Nothing here shows or needs another seat's hidden cards or the stock: only the seat's own copy
// of the events.
//
// Kept apart from the page (main.ts) and from where the expectations come from, so that the
// commit-first flow (the lobby seals a seed before the game is created, and the player adds
// their own) only hands `expected` to checkSeatDeal: see README, "In a browser".
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import {
  checkDeal,
  gameStartOf,
  RulesSchema,
  type GameEvent,
  type GameKind,
  type ShuffleCrypto,
} from "@croupier/client/web";

export { shortHex } from "@croupier/client/web";

/** What the page shows before the check: the commitment from the game's first event on, the
 * server's seed (hex) once the game's last event reveals it. */
export class SealWatcher {
  commitment = "";
  serverSeed = "";

  add(event: GameEvent): void {
    const start = gameStartOf(event);
    if (start) this.commitment = start.commitment;
    const body = event.body?.body;
    if (body?.case === "seedRevealed") this.serverSeed = body.value.serverSeed;
  }
}

/** What the lobby's tab was shown before the game existed, kept as JSON by game id: the
 * commitment of the server's seed ticket, the seed the page drew after it (the game's only
 * client seed), and the game it asked for (the people sit first: the tab's player at seat 0; the
 * preset's rules, as ListPresets gave them, with the lobby's overrides, in protobuf's JSON). */
export interface Expected {
  readonly commitment?: string;
  readonly clientSeed?: string;
  readonly game?: {
    readonly kind: GameKind;
    readonly seats: number;
    readonly seat: number;
    readonly rules?: JsonValue;
  };
}

/** The check in the page's words: the verdict, and a line each for what matched (and what was
 * not checked), or for what did not. */
export interface PageCheck {
  readonly ok: boolean;
  readonly text: string;
  readonly details: readonly string[];
}

/** The seat's own copy of the events (`seat` undefined: a spectator's) checked, and held to
 * `expected`. `subtle`: WebCrypto (the page's, or a test's). */
export async function checkSeatDeal(
  events: readonly GameEvent[],
  seat: number | undefined,
  expected: Expected = {},
  subtle?: ShuffleCrypto,
): Promise<PageCheck> {
  const { game } = expected;
  const check = await checkDeal(events, {
    seat,
    subtle,
    commitment: expected.commitment,
    clientSeeds: expected.clientSeed === undefined ? undefined : [expected.clientSeed],
    game: game && {
      kind: game.kind,
      seats: game.seats,
      seat: game.seat,
      rules: game.rules === undefined ? undefined : fromJson(RulesSchema, game.rules),
    },
  });
  const lines = check.ok ? [...check.passed, ...check.unchecked] : check.failed;
  return { ok: check.ok, text: check.text, details: lines.map((line) => line.text) };
}
