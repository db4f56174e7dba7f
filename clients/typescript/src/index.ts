// @croupier/client: the contract's messages and GameService (generated from proto/ by buf into
// src/gen), and a thin layer over connect: tokens, submit and createGame with safe retries, decoded errors.
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
export { asToken, bearer, TOKEN, withToken, type GameClient } from "./auth.js";
export { baseUrl, connect, type ConnectOptions, type Croupier } from "./connect.js";
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
  isConnectionLoss,
  isRetryable,
  RATE_LIMITED,
  submit,
  VERSION_CONFLICT,
  type RetryPolicy,
  type SubmitOptions,
} from "./submit.js";
