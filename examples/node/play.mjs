// Plays one whole game of each kind — Hoola, Koi-Koi, Gin Rummy, Rummy with jokers — against a
// running Croupier server over native gRPC, with legal moves only, and prints each settlement.
//
//   node play.mjs [--address 127.0.0.1:50051]
//
// The studio token that creates the games: $CROUPIER_STUDIO_KEY, else the development credential
// a local `make run` writes to data/dev-studio-credential (--studio-key-file to read another).
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { connect, createGame, GameKind, submit } from "@croupier/client";

const { values: args } = parseArgs({
  options: {
    address: { type: "string", default: "127.0.0.1:50051" },
    "studio-key-file": { type: "string" },
  },
});

function studioToken() {
  if (process.env.CROUPIER_STUDIO_KEY) {
    return process.env.CROUPIER_STUDIO_KEY.trim();
  }
  const file =
    args["studio-key-file"] ?? new URL("../../data/dev-studio-credential", import.meta.url);
  return readFileSync(file, "utf8").trim();
}

// One game of each kind, short ones: a one-round Hoola table, a three-round Koi-Koi match, a
// single hand of gin, a rummy hand.
const GAMES = [
  {
    name: "hoola",
    kind: GameKind.HOOLA,
    seats: 3,
    preset: "korean",
    overrides: { game: { case: "hoola", value: { rounds: 1 } } },
  },
  { name: "koikoi", kind: GameKind.KOIKOI, seats: 2, preset: "nintendo-3" },
  { name: "gin", kind: GameKind.GIN, seats: 2, preset: "single-hand" },
  { name: "rummy", kind: GameKind.RUMMY, seats: 3, preset: "standard" },
];

// What a simple player prefers, by move (the field set in the game's command), best first.
const PREFERENCES = {
  hoola: ["nextRound", "declare", "stop", "meld", "layOff", "draw", "discard"],
  koikoi: ["nextRound", "shobu", "chooseCapture"],
  gin: ["nextHand", "knock", "layOff", "endLayOffs", "drawStock", "pass", "discard"],
  rummy: ["layDown", "layOff", "swapJoker", "drawStock", "discard"],
};
const RANKS = "A23456789TJQK";
const MAX_MOVES = 5000;

/** The kind of a legal move: "draw", "discard", "knock"… */
function moveOf(legal) {
  return legal.command.game.value.move.case;
}

/** A plausible legal move: the preferred kind; the biggest meld; the highest card to discard
 * (jokers kept); a Koi-Koi card that captures. */
function choose(game, moves) {
  for (const kind of PREFERENCES[game]) {
    const ofKind = moves.filter((m) => moveOf(m) === kind);
    if (ofKind.length === 0) {
      continue;
    }
    if (kind === "discard") {
      const rank = (m) => {
        const card = m.command.game.value.move.value.card;
        return card.startsWith("JK") ? -1 : RANKS.indexOf(card[0]);
      };
      return ofKind.reduce((best, m) => (rank(m) > rank(best) ? m : best));
    }
    // A longer label names more cards ("Meld 7H 8H 9H 10H").
    return ofKind.reduce((best, m) => (m.label.length > best.label.length ? m : best));
  }
  return moves.find((m) => /capture/i.test(m.label)) ?? moves[0];
}

async function play(croupier, studio, spec) {
  // createGame resends a CreateGame whose answer was lost with the same request id (made for
  // it): the retry gets the game the first attempt made, never a second one.
  const created = await createGame(croupier.as(studio), {
    kind: spec.kind,
    preset: spec.preset,
    seats: spec.seats,
    overrides: spec.overrides,
    clientSeeds: [`node example ${spec.name}`],
  });
  const gameId = created.gameId;
  const seats = created.tokens.map((t) => croupier.as(t.token));
  // Who is to act comes with every view and every answer: no per-game code to know whose turn.
  let { toAct, finished, version } = await seats[0].getView({ gameId });
  let offered = null; // the acting seat's legal moves, when the last answer carried them
  let moves = 0;
  while (!finished) {
    if (++moves > MAX_MOVES) {
      throw new Error(`${spec.name}: not over after ${MAX_MOVES} moves`);
    }
    // The seat the game waits on (`turn`); the others listed may act out of turn, or not.
    const seat = (toAct.find((t) => t.turn) ?? toAct[0]).seat;
    if (offered === null || offered.seat !== seat) {
      const legal = await seats[seat].listLegalMoves({ gameId });
      offered = { seat, moves: legal.moves, version: legal.version };
    }
    const move = choose(spec.name, offered.moves);
    // One call per move: the answer says who acts next, and lists this seat's next moves.
    const answer = await submit(seats[seat], {
      gameId,
      expectedVersion: offered.version,
      command: move.command,
      include: { toAct: true, legalMoves: true },
    });
    ({ toAct, finished } = answer);
    // The parts are as of stateVersion: later than the command's version when the service
    // played an away seat's turn right after it.
    version = answer.stateVersion || answer.version;
    offered = { seat, moves: answer.legalMoves, version };
  }
  const { settlement } = await seats[0].getSettlement({ gameId, final: true });
  console.log(`${spec.name}: game ${gameId} over after ${moves} moves (version ${version})`);
  console.log(`  outcome ${settlement.outcome}, winners [${settlement.winners.join(", ")}]`);
  console.log(`  net per seat: ${settlement.net.map(String).join(" ")}`);
  for (const line of settlement.lines) {
    console.log(`  ${line.summary}`);
  }
  for (const note of settlement.notes) {
    console.log(`  ${note}`);
  }
}

const croupier = connect({ address: args.address });
const studio = studioToken();
for (const spec of GAMES) {
  await play(croupier, studio, spec);
}
