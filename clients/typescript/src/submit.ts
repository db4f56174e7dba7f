// SubmitCommand with retries that are safe: every attempt sends the same command id, and the
// service answers a repeated id with its first answer, applying nothing twice (docs/event-log.md,
// "Concurrency and idempotency"). So a command whose answer was lost is retried without fear.
// CreateGame likewise, with a request id.
//
// Browser-safe: no Node built-in, only the globals browsers and Node.js share (crypto's random
// values, setTimeout), so that the web entry (web.ts) bundles it as it is.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, type CallOptions } from "@connectrpc/connect";
import type { GameClient } from "./auth.js";
import { CroupierError, decodeError } from "./errors.js";
import { randomId } from "./ids.js";
import type {
  CreateGameRequestSchema,
  CreateGameResponse,
  EndGameRequestSchema,
  EndGameResponse,
  SubmitCommandRequestSchema,
  SubmitCommandResponse,
} from "./gen/croupier/v1/service_pb.js";

/** How many times, and how patiently, submit tries one command. */
export interface RetryPolicy {
  /** Attempts in all, the first included. */
  readonly attempts: number;
  /** The wait before the second attempt; it doubles after each (with jitter), up to maxDelayMs. */
  readonly baseDelayMs: number;
  readonly maxDelayMs: number;
}

/** Eight attempts: some 4 s of waits in all (5.2 s at most, unless a RetryInfo asks for longer
 * ones: 7 to 9 s with STORE_UNAVAILABLE's 1 s), long enough to ride out a server's
 * restart (a rolling update) under a move; five gave up after 0.75 s, and a player's move clicked
 * during a restart was dropped. A retry is safe however late: the command id is the same. */
export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseDelayMs: 50, maxDelayMs: 2000 };

/** ABORTED's reason when the game is not at the command's expected_version (app/core.py). */
export const VERSION_CONFLICT = "VERSION_CONFLICT";
/** RESOURCE_EXHAUSTED's reason when a seat sends commands too fast (with a RetryInfo). */
export const RATE_LIMITED = "RATE_LIMITED";

export interface SubmitOptions extends CallOptions {
  readonly retry?: Partial<RetryPolicy>;
  /** Called before each retry (logging, metrics). */
  readonly onRetry?: (error: CroupierError, attempt: number, waitMs: number) => void;
}

/**
 * Whether a failed SubmitCommand may be sent again as it is (same command id, same
 * expected_version), and is worth it:
 * - a lost connection (isConnectionLoss: UNAVAILABLE, or a transport's failure without an
 *   ErrorInfo): the command may or may not have been applied, and the same id makes the retry
 *   return the first answer if it was.
 * - RESOURCE_EXHAUSTED RATE_LIMITED: refused before anything was decided; come back after the
 *   RetryInfo's delay.
 * - ABORTED VERSION_CONFLICT whose current_version is the expected_version we sent: the service
 *   reported no newer version. That happens when a command arrives after a turn's deadline and
 *   the time-out it records first loses its race to another process (app/core.py, Croupier._decide
 *   and tick): the retry is then either applied, or told the version that moved the game on.
 * Any other ABORTED means the game moved on (another seat's move, a time-out's forced move): the
 * command was chosen on an older state and the caller must read the game again and choose anew.
 * A retry of a command whose first attempt was applied gets that first answer even then (the
 * service looks up the id before it reports a conflict).
 */
export function isRetryable(error: CroupierError, expectedVersion: bigint): boolean {
  if (isConnectionLoss(error)) {
    return true;
  }
  switch (error.code) {
    case Code.ResourceExhausted:
      return error.reason === RATE_LIMITED;
    case Code.Aborted:
      return error.reason === VERSION_CONFLICT && error.currentVersion === expectedVersion;
    default:
      return false;
  }
}

/** What the transport makes of a connection lost under a call (connect-node: a stream closed
 * under it is CANCELED, a reset connection ABORTED "read ECONNRESET"), with no answer of the
 * service's: its every error carries an ErrorInfo (so a reason); these never do. */
const LOSSES = new Set([Code.Canceled, Code.Aborted, Code.Unknown, Code.Internal]);

/**
 * Whether a call failed for want of a connection rather than by the service's answer: UNAVAILABLE,
 * or a transport's failure that carries no ErrorInfo. The request may or may not have been
 * carried out; with the same command id (request id) a retry is answered as it was. The caller's
 * own cancellation is not retried (see `retrying`), nor its deadline (DEADLINE_EXCEEDED: the
 * caller's budget for the call is spent).
 */
export function isConnectionLoss(error: CroupierError): boolean {
  return error.code === Code.Unavailable || (error.reason === "" && LOSSES.has(error.code));
}

/** The wait before attempt `attempt + 1`: exponential with jitter, at least the server's
 * RetryInfo delay, in whole milliseconds (what onRetry shows). */
export function backoffMs(error: CroupierError, attempt: number, policy: RetryPolicy): number {
  const exponential = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  // Half fixed, half random: retries of many clients do not land together.
  const jittered = exponential / 2 + (Math.random() * exponential) / 2;
  return Math.round(Math.max(jittered, error.retryDelayMs ?? 0));
}

/** Wait `ms`, or until `signal` aborts (rejecting with its reason, as a fetch would). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/** Make `call` until it answers, `retryable` says no, or the policy's attempts are spent. */
async function retrying<T>(
  call: (options: CallOptions) => Promise<T>,
  retryable: (error: CroupierError) => boolean,
  options: SubmitOptions,
): Promise<T> {
  const { retry, onRetry, ...callOptions } = options;
  const policy: RetryPolicy = { ...DEFAULT_RETRY, ...retry };
  for (let attempt = 1; ; attempt++) {
    try {
      return await call(callOptions);
    } catch (thrown) {
      const error = decodeError(thrown);
      // The caller's own cancellation is CANCELED too: never sent again.
      if (attempt >= policy.attempts || callOptions.signal?.aborted || !retryable(error)) {
        throw error;
      }
      const waitMs = backoffMs(error, attempt, policy);
      onRetry?.(error, attempt, waitMs);
      await sleep(waitMs, callOptions.signal);
    }
  }
}

/**
 * Submit one command, retrying transient failures (isRetryable) with the same command id, so
 * that it is applied at most once. A request without a command id gets a random one. Throws a
 * CroupierError for anything else, or when the attempts are spent.
 */
export async function submit(
  client: GameClient,
  request: MessageInitShape<typeof SubmitCommandRequestSchema>,
  options: SubmitOptions = {},
): Promise<SubmitCommandResponse> {
  const sent = { ...request, commandId: request.commandId || randomId() };
  const expected = BigInt(request.expectedVersion ?? 0n);
  return retrying(
    (callOptions) => client.submitCommand(sent, callOptions),
    (error) => isRetryable(error, expected),
    options,
  );
}

/**
 * CreateGame (with the studio's token), retrying a lost connection (isConnectionLoss) and
 * RATE_LIMITED with the same request id, so that one game is made however many attempts it
 * takes: a retry whose first attempt made the game is answered with that game (service.proto,
 * CreateGameRequest.request_id). Throws a CroupierError for anything else, or when the attempts
 * are spent (a server down for longer than `retry` allows): the game may have been made then.
 * So a backend makes the request id itself (randomId()) and stores it, with the whole request,
 * before the call, and sends that same request again later (after its own restart too): it gets
 * the game, never a second one. A request without a request id gets a random one, which the
 * caller never sees: after a failure it cannot tell whether a game was made.
 */
export async function createGame(
  client: GameClient,
  request: MessageInitShape<typeof CreateGameRequestSchema>,
  options: SubmitOptions = {},
): Promise<CreateGameResponse> {
  const sent = { ...request, requestId: request.requestId || randomId() };
  return retrying(
    (callOptions) => client.createGame(sent, callOptions),
    (error) =>
      isConnectionLoss(error) ||
      (error.code === Code.ResourceExhausted && error.reason === RATE_LIMITED),
    options,
  );
}

/**
 * EndGame (with the studio's token), retrying a lost connection (isConnectionLoss, a store away)
 * with the same command id, so that a game ended whose answer was lost is answered
 * `alreadyApplied` with its final settlement, not refused GAME_OVER; without an
 * `expectedVersion`, also ABORTED VERSION_CONFLICT (moves kept landing first: service.proto,
 * EndGameRequest.expected_version). A request without a command id gets a random one (keep your
 * own to retry after a failure). Throws a CroupierError for anything else (GAME_OVER: the game
 * ended by itself or by another call; read its final settlement with GetSettlement), or when the
 * attempts are spent.
 */
export async function endGame(
  client: GameClient,
  request: MessageInitShape<typeof EndGameRequestSchema>,
  options: SubmitOptions = {},
): Promise<EndGameResponse> {
  const sent = { ...request, commandId: request.commandId || randomId() };
  const anyVersion = request.expectedVersion === undefined;
  return retrying(
    (callOptions) => client.endGame(sent, callOptions),
    (error) =>
      isConnectionLoss(error) ||
      (anyVersion && error.code === Code.Aborted && error.reason === VERSION_CONFLICT),
    options,
  );
}
