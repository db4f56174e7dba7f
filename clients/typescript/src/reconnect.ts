// What a long-lived stream needs to outlive the network it runs over, shared by followGame
// (StreamEvents, follow.ts) and playSeat (Play, play.ts): the heartbeat asked of the server, a
// watchdog that gives up a stream gone silent (a proxy or a network that stalls without closing
// it: HTTP/1.1 streams have no pings), and the reopening of a broken stream with submit's backoff
// until a failure no retry can mend (the token, the game, the request).
//
// Browser-safe: no Node built-in, only what browsers and Node.js share (AbortController,
// setTimeout), so that the web entry (web.ts) bundles it as it is.
import { Code, ConnectError } from "@connectrpc/connect";
import { CroupierError, decodeError } from "./errors.js";
import { backoffMs, sleep, type RetryPolicy } from "./submit.js";

/** The heartbeat followGame and playSeat ask for when none is given, in seconds. */
export const DEFAULT_HEARTBEAT_S = 15;
/** The server's limit on StreamEventsRequest.heartbeat_s and PlayJoin.heartbeat_s. */
export const MAX_HEARTBEAT_S = 300;
/** No message at all (event, state, answer or heartbeat) for this many heartbeats' spells: the
 * stream is taken for dead and reopened. More than 2, so that one heartbeat a little late (a busy
 * server, a slow network) is not taken for silence. */
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

export const MS_PER_SECOND = 1000;

/** `heartbeatS` (DEFAULT_HEARTBEAT_S when not given) if the server would take it, else a
 * RangeError. */
export function heartbeatSeconds(heartbeatS: number | undefined): number {
  const seconds = heartbeatS ?? DEFAULT_HEARTBEAT_S;
  if (!Number.isInteger(seconds) || seconds < 1 || seconds > MAX_HEARTBEAT_S) {
    throw new RangeError(`heartbeatS is a whole number of seconds from 1 to ${MAX_HEARTBEAT_S}`);
  }
  return seconds;
}

/** How long a stream with heartbeats every `heartbeatS` may be silent before it is given up. */
export function silenceMs(heartbeatS: number): number {
  return heartbeatS * SILENCE_HEARTBEATS * MS_PER_SECOND;
}

/** One stream's AbortController, aborted when no message comes for `ms` (the watchdog), or when
 * the caller's signal aborts. A follower pauses it while the caller holds a message: a stream not
 * read is not silent. */
export class Watchdog {
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

/** The failures in a row of one stream reopened again and again, and the wait before each
 * reopening. */
export class Reconnects {
  private failures = 0;

  constructor(
    private readonly policy: RetryPolicy,
    private readonly onRetry?: (error: CroupierError, attempt: number, waitMs: number) => void,
  ) {}

  /** The server answered: the next break waits the shortest again. */
  heard(): void {
    this.failures = 0;
  }

  /**
   * After a stream's failure: throws `error` when no reopening can mend it (isPermanent) or the
   * policy's attempts are spent (failures in a row, with no message between them); else tells
   * onRetry, waits (backoffMs: at least a RetryInfo's delay) and resolves true, or false when
   * `signal` aborts during the wait.
   */
  async wait(error: CroupierError, signal: AbortSignal | undefined): Promise<boolean> {
    if (isPermanent(error)) {
      throw error;
    }
    this.failures++;
    if (this.failures >= this.policy.attempts) {
      throw error;
    }
    const waitMs = backoffMs(error, this.failures, this.policy);
    this.onRetry?.(error, this.failures, waitMs);
    try {
      await sleep(waitMs, signal);
      return true;
    } catch {
      return false; // the caller aborted during the wait
    }
  }
}
