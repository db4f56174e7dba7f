// Following a game live over StreamEvents through networks that break or stall, as the reference
// web client does (clients/web/src/main.ts, `follow`): the stream asks for heartbeats
// (StreamEventsRequest.heartbeat_s) and a watchdog gives up a stream silent for SILENCE_HEARTBEATS
// of them (a proxy or a network that stalls without closing it: HTTP/1.1 streams have no pings);
// a broken stream is reopened after the last event's version (never a state's: a state can be
// ahead of the events), with submit's backoff, so that each event comes exactly once; a failure
// no retry can mend (the token, the game, the request) ends it with the decoded error. Those
// pieces (reconnect.ts) are playSeat's too (play.ts: a seat's bidirectional Play stream).
//
// Browser-safe: no Node built-in, only what browsers and Node.js share (AbortController,
// setTimeout), so that the web entry (web.ts) bundles it as it is.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallOptions } from "@connectrpc/connect";
import type { GameClient } from "./auth.js";
import { CroupierError, decodeError } from "./errors.js";
import type { GameEvent, IncludeSchema, PlayState } from "./gen/croupier/v1/service_pb.js";
import { FOLLOW_RETRY, heartbeatSeconds, Reconnects, silenceMs, Watchdog } from "./reconnect.js";
import type { RetryPolicy } from "./submit.js";

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
  return follow(client, options, heartbeatSeconds(options.heartbeatS));
}

async function* follow(
  client: GameClient,
  options: FollowOptions,
  heartbeatS: number,
): AsyncGenerator<FollowMessage, void, undefined> {
  const { gameId, include, signal, onRetry, headers, contextValues } = options;
  const reconnects = new Reconnects({ ...FOLLOW_RETRY, ...options.retry }, onRetry);
  // The last event delivered: each stream resumes after it.
  let after = BigInt(options.afterVersion ?? 0n);
  for (;;) {
    if (signal?.aborted) {
      return;
    }
    const alive = new Watchdog(silenceMs(heartbeatS), signal);
    try {
      const stream = client.streamEvents(
        { gameId, afterVersion: after, include, heartbeatS },
        { headers, contextValues, signal: alive.signal },
      );
      for await (const message of stream) {
        alive.feed(); // any message, a heartbeat too, says the connection still carries them
        reconnects.heard(); // the server answers: the next break waits the shortest again
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
      const error: CroupierError = alive.fired ?? decodeError(thrown);
      // Thrown when permanent or the retries are spent; false: the caller aborted the wait.
      if (!(await reconnects.wait(error, signal))) {
        return;
      }
    } finally {
      alive.stop();
    }
  }
}
