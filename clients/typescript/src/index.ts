// @croupier/client: the contract's messages and GameService (generated from proto/ by buf into
// src/gen), and a thin layer over connect: tokens, submit and createGame with safe retries,
// followGame (a game live across broken connections), decoded errors, a player's own check of
// the deal (checkDeal) (web.ts, which browsers get), and for Node.js only connect(), one
// native-gRPC connection, playSeat(), a seat's bidirectional Play stream across broken
// connections, and the studio's tokens minted.
export * from "./web.js";
export {
  baseUrl,
  connect,
  PING_INTERVAL_MS,
  PING_TIMEOUT_MS,
  type ConnectOptions,
  type Croupier,
} from "./connect.js";
export {
  keyId,
  MIN_SECRET_BYTES,
  mintPlayerToken,
  mintStudioToken,
  parseSecret,
} from "./tokens.js";
export {
  playSeat,
  refusalError,
  type PlayMessage,
  type PlayOptions,
  type PlaySeat,
} from "./play.js";
