// @croupier/client/web: everything of the package that runs in a browser, which is all of it but
// connect() (connect-node's native gRPC transport: node:http2) and playSeat (the bidirectional
// Play stream, which browsers cannot hold: a page plays with submit and followGame). A page makes its own transport
// with @connectrpc/connect-web and this package's interceptors (README, "In a browser"):
//
//   createConnectTransport({ baseUrl, interceptors: [decodeErrors, bearer()] })
//
// Bundlers that target browsers (esbuild, Vite, webpack) also pick this file for a plain
// "@croupier/client" import (the `browser` condition of package.json's exports), and so does
// React Native's Metro (the `react-native` condition).
export * from "./gen/croupier/v1/common_pb.js";
export * from "./gen/croupier/v1/gin_pb.js";
export * from "./gen/croupier/v1/hoola_pb.js";
export * from "./gen/croupier/v1/koikoi_pb.js";
export * from "./gen/croupier/v1/melds_pb.js";
export * from "./gen/croupier/v1/replay_pb.js";
export * from "./gen/croupier/v1/rummy_pb.js";
export * from "./gen/croupier/v1/service_pb.js";
export {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
  type BadRequest,
  type ErrorInfo,
  type RetryInfo,
} from "./gen/google/rpc/error_details_pb.js";
export { Code, ConnectError } from "@connectrpc/connect";
export { asToken, bearer, TOKEN, withToken, type GameClient, type TokenSource } from "./auth.js";
export { NO_RANDOM_SOURCE, randomId, type RandomSource } from "./ids.js";
export {
  CroupierError,
  decodeError,
  decodeErrors,
  DOMAIN,
  isCroupierError,
  type FieldViolation,
} from "./errors.js";
export {
  backoffMs,
  createGame,
  DEFAULT_RETRY,
  endGame,
  isConnectionLoss,
  isRetryable,
  RATE_LIMITED,
  submit,
  VERSION_CONFLICT,
  type RetryPolicy,
  type SubmitOptions,
} from "./submit.js";
export {
  DEFAULT_HEARTBEAT_S,
  FOLLOW_RETRY,
  isPermanent,
  MAX_HEARTBEAT_S,
  PERMANENT_CODES,
  SILENCE_HEARTBEATS,
} from "./reconnect.js";
export { followGame, type FollowMessage, type FollowOptions } from "./follow.js";
export {
  bytesToHex,
  commitmentOf,
  DEAL,
  FIRST_DEALER,
  hanafudaDeck,
  hexToBytes,
  RANKS,
  redealPurpose,
  reshufflePurpose,
  rummyDeck,
  seedMatchesCommitment,
  SHUFFLE_LABEL,
  shuffleCards,
  shuffleCrypto,
  SIT_OUT,
  standardDeck,
  SUITS,
  type CryptoKeyLike,
  type ShuffleCrypto,
  type ShufflePurpose,
  type ShuffleSeeds,
} from "./shuffle.js";
export {
  checkDeal,
  gameStartOf,
  shortHex,
  type DealCheck,
  type DealCheckLine,
  type DealCheckOptions,
  type DealCheckPart,
  type DealCheckStatus,
  type DealFailure,
  type GameStart,
  type ShownGame,
} from "./dealcheck.js";
