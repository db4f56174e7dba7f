// Following a game live over StreamEvents through networks that break or stall, as the reference
// web client does (clients/web/src/main.ts, `follow`): the stream asks for heartbeats
// (StreamEventsRequest.heartbeat_s) and a watchdog gives up a stream silent for SILENCE_HEARTBEATS
// of them (a proxy or a network that stalls without closing it: HTTP/1.1 streams have no pings);
// a broken stream is reopened after the last event's version (never a state's: a state can be
// ahead of the events), with submit's backoff, so that each event comes exactly once; a failure
// no retry can mend (the token, the game, the request) ends it with the decoded error.
//
// Browser-safe: no Node built-in, only what browsers and Node.js share (AbortController,
// setTimeout), so that the web entry (web.ts) bundles it as it is.
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError, type CallOptions } from "@connectrpc/connect";
import type { GameClient } from "./auth.js";
import { CroupierError, decodeError } from "./errors.js";
import type { GameEvent, IncludeSchema, PlayState } from "./gen/croupier/v1/service_pb.js";
import { backoffMs, sleep, type RetryPolicy } from "./submit.js";

/** The heartbeat followGame asks for when none is given, in seconds. */
export const DEFAULT_HEARTBEAT_S = 15;
/** The server's limit on StreamEventsRequest.heartbeat_s. */
export const MAX_HEARTBEAT_S = 300;
/** No message at all (event, state or heartbeat) for this many heartbeats' spells: the stream is
 * taken for dead and reopened. More than 2, so that one heartbeat a little late (a busy server, a
 * slow network) is not taken for silence. */
export const SILENCE_HEARTBEATS = 2.5;
/** Reopening a broken stream: after about a second, then twice as long each time (with jitter),
 * at most half a minute apart; never before a RetryInfo's delay; for as long as it is followed. */
export const FOLLOW_RETRY: RetryPolicy = {
  attempts: Number.POSITIVE_INFINITY,
  baseDelayMs: 1000,
  maxDelayMs: 30_000,
};

/** The codes with which a stream can never succeed, however often it is opened again: the token
 * (UNAUTHENTICATED, PERMISSION_DENIED), the game (NOT_FOUND), the request (INVALID_ARGUMENT: a
 * mangled game id, an after_version past the game's, a heartbeat out of range) or the game's state
 * (FAILED_PRECONDITION). */
export const PERMANENT_CODES: ReadonlySet<Code> = new Set([
  Code.Unauthenticated,
  Code.PermissionDenied,
  Code.NotFound,
  Code.InvalidArgument,
  Code.FailedPrecondition,
]);

/** Whether a stream that failed so would fail again however often it is reopened. Any other
 * failure (UNAVAILABLE, a network's error, the watchdog, SERVER_SHUTTING_DOWN…) is retried. */
export function isPermanent(error: CroupierError): boolean {
  return PERMANENT_CODES.has(error.code);
}

/** What followGame yields: the stream's messages but its heartbeats, as a tagged union. */
export type FollowMessage =
  | { readonly case: "event"; readonly value: GameEvent }
  | { readonly case: "state"; readonly value: PlayState };

export interface FollowOptions extends Pick<CallOptions, "headers" | "contextValues"> {
  readonly gameId: string;
  /** Deliver the events after this version (0, the default: from the first). */
  readonly afterVersion?: bigint;
  /** The parts of the seat's state pushed after each batch of events (StreamEventsRequest.include):
   * any part asked for brings `state` messages. */
  readonly include?: MessageInitShape<typeof IncludeSchema>;
  /** The heartbeat asked of the server, in seconds (1 to MAX_HEARTBEAT_S; DEFAULT_HEARTBEAT_S). A
   * stream silent for SILENCE_HEARTBEATS times as long is reopened. */
  readonly heartbeatS?: number;
  /** Aborting it ends the iteration (no error), whether a stream is open or a retry waits. */
  readonly signal?: AbortSignal;
  /** How patiently a broken stream is reopened (FOLLOW_RETRY). `attempts` counts the failures in a
   * row, with no message between them: when spent, the last failure is thrown. */
  readonly retry?: Partial<RetryPolicy>;
  /** Called before each reopening (logging, "reconnecting…" in a page), with the failure, how many
   * failures in a row, and the wait. */
  readonly onRetry?: (error: CroupierError, attempt: number, waitMs: number) => void;
}

const MS_PER_SECOND = 1000;

/** One stream's AbortController, aborted when no message comes for `ms` (the watchdog), or when
 * the caller's signal aborts. Paused while the caller holds a message: a stream not read is not
 * silent. */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** The failure the watchdog reports when it fires: UNAVAILABLE without a reason, a lost
   * connection. */
  fired: CroupierError | undefined;

  constructor(
    private readonly ms: number,
    private readonly caller: AbortSignal | undefined,
  ) {
    caller?.addEventListener("abort", this.onCallerAbort);
    this.feed();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  private readonly onCallerAbort = (): void => this.controller.abort(this.caller?.reason);

  /** A message came: the silence starts again. */
  feed(): void {
    this.pause();
    this.timer = setTimeout(() => {
      const seconds = this.ms / MS_PER_SECOND;
      this.fired = decodeError(new ConnectError(`no message for ${seconds} s`, Code.Unavailable));
      this.controller.abort(this.fired);
    }, this.ms);
  }

  pause(): void {
    clearTimeout(this.timer);
  }

  /** The stream is done with: no timer left, the call cancelled if still open. */
  stop(): void {
    this.pause();
    this.caller?.removeEventListener("abort", this.onCallerAbort);
    this.controller.abort(new ConnectError("stream done with", Code.Canceled));
  }
}

/**
 * Follow a game live (StreamEvents): its events as the caller's token may see them and, with
 * `include`, the seat's state after each batch, until the game is over (the stream ends) or
 * `signal` aborts. Heartbeats are asked for and consumed here; a stream silent for
 * SILENCE_HEARTBEATS heartbeats, or broken, is reopened after the last event delivered, with a
 * growing wait (`retry`), so that every event comes once and in order across reconnects (a state
 * may come again at a version already seen, or ahead of the events: act once per version).
 * Throws the decoded CroupierError when the failure is permanent (isPermanent) or the retries are
 * spent; a heartbeatS out of range is a RangeError at once.
 */
export function followGame(
  client: GameClient,
  options: FollowOptions,
): AsyncGenerator<FollowMessage, void, undefined> {
  const heartbeatS = options.heartbeatS ?? DEFAULT_HEARTBEAT_S;
  if (!Number.isInteger(heartbeatS) || heartbeatS < 1 || heartbeatS > MAX_HEARTBEAT_S) {
    throw new RangeError(`heartbeatS is a whole number of seconds from 1 to ${MAX_HEARTBEAT_S}`);
  }
  return follow(client, options, heartbeatS);
}

async function* follow(
  client: GameClient,
  options: FollowOptions,
  heartbeatS: number,
): AsyncGenerator<FollowMessage, void, undefined> {
  const { gameId, include, signal, onRetry, headers, contextValues } = options;
  const policy: RetryPolicy = { ...FOLLOW_RETRY, ...options.retry };
  const silenceMs = heartbeatS * SILENCE_HEARTBEATS * MS_PER_SECOND;
  // The last event delivered: each stream resumes after it.
  let after = BigInt(options.afterVersion ?? 0n);
  for (let failures = 0; ;) {
    if (signal?.aborted) {
      return;
    }
    const alive = new Watchdog(silenceMs, signal);
    try {
      const stream = client.streamEvents(
        { gameId, afterVersion: after, include, heartbeatS },
        { headers, contextValues, signal: alive.signal },
      );
      for await (const message of stream) {
        alive.feed(); // any message, a heartbeat too, says the connection still carries them
        failures = 0; // the server answers: the next break waits the shortest again
        let out: FollowMessage;
        if (message.event) {
          // Never one twice, whatever a stream sends again.
          if (message.event.version <= after) {
            continue;
          }
          after = message.event.version;
          out = { case: "event", value: message.event };
        } else if (message.state) {
          out = { case: "state", value: message.state };
        } else {
          continue; // a heartbeat
        }
        alive.pause();
        yield out;
        alive.feed();
      }
      return; // the game is over: the stream ended after its last events
    } catch (thrown) {
      alive.stop(); // no watchdog during the wait below
      if (signal?.aborted) {
        return;
      }
      const error = alive.fired ?? decodeError(thrown);
      if (isPermanent(error)) {
        throw error;
      }
      failures++;
      if (failures >= policy.attempts) {
        throw error;
      }
      const waitMs = backoffMs(error, failures, policy);
      onRetry?.(error, failures, waitMs);
      try {
        await sleep(waitMs, signal);
      } catch {
        return; // the caller aborted during the wait
      }
    } finally {
      alive.stop();
    }
  }
}
