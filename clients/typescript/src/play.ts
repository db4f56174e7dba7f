// Playing a seat over one bidirectional Play stream (proto/croupier/v1/service.proto, Play), as a
// mobile client does, through networks that break or stall: the seat's events and states come in,
// its commands go out on the same stream, and a broken stream is joined again without losing or
// repeating an event or applying a command twice:
// - every (re)connection joins first, after the last *event* delivered (never a state's version
//   nor an answer's: an answer may come before the events its command made);
// - the join asks for heartbeats, and a stream silent for SILENCE_HEARTBEATS of them is given up
//   and reopened (the watchdog, reconnect.ts, as followGame's);
// - a broken stream is reopened with followGame's backoff; a failure no retry can mend (the
//   token, the game, the request: isPermanent) ends it with the decoded error;
// - the commands sent but not answered when a connection breaks are sent again after the next
//   join, with the same command id and the same expected_version: the service applies an id once,
//   and answers a resend of an applied command `accepted` with `already_applied`.
// The join asks for `batched` messages (a batch's events and its state in one message: fewer
// messages per move), which are handed on as the same `event` and `state` messages followGame
// yields; a server that sends them one by one is understood too.
//
// Node.js only in practice (web.ts leaves it out): browsers cannot hold a bidirectional stream
// (fetch has no streaming request body over HTTP/1.1); a page plays with submit and followGame.
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import type { GameClient } from "./auth.js";
import { CroupierError, decodeError, DOMAIN } from "./errors.js";
import type { FollowMessage, FollowOptions } from "./follow.js";
import {
  CommandSchema,
  PlayAcceptedSchema,
  type GameEvent,
  type PlayAccepted,
  type PlayRefused,
  type PlayRequestSchema,
  type PlayResponse,
  type PlayState,
} from "./gen/croupier/v1/service_pb.js";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";
import { randomId } from "./ids.js";
import {
  FOLLOW_RETRY,
  heartbeatSeconds,
  MS_PER_SECOND,
  Reconnects,
  silenceMs,
  Watchdog,
} from "./reconnect.js";
import { backoffMs, DEFAULT_RETRY, isRetryable, submit, type RetryPolicy } from "./submit.js";

/** What a seat receives: the game's events (each once, in order) and its states, as followGame
 * yields them. */
export type PlayMessage = FollowMessage;

/** followGame's options (the same stream behaviour: the join after the last event delivered,
 * heartbeats and their watchdog, the backoff between reopenings; aborting `signal` closes the
 * seat), and how refused commands are sent again. */
export interface PlayOptions extends FollowOptions {
  /** How a command refused for a passing reason is sent again on the stream, with the same id and
   * expected_version, as submit retries it (isRetryable: RATE_LIMITED after its delay, the store
   * unavailable, a VERSION_CONFLICT at the very version sent): DEFAULT_RETRY. */
  readonly sendRetry?: Partial<RetryPolicy>;
}

/** A seat at a game over Play: the messages it receives, and its commands. */
export interface PlaySeat extends AsyncIterable<PlayMessage> {
  /**
   * Send a command at `expectedVersion` (a state's version: the game as the command was chosen
   * on), with `commandId` (a new randomId() when not given; a resend with an id still unanswered
   * is the same command, and gets the same answer). Resolves with the service's PlayAccepted
   * (`already_applied` when a resend after a lost answer found it applied); rejects with the
   * CroupierError submit() would throw for the same refusal (status code, reason, `info`, `field`,
   * `retryDelayMs`), after the retries submit would make; with the seat's failure when the seat
   * fails, and CANCELED when it is closed first. A command sent when no stream is open waits for
   * the next join; one sent after the game's stream ended is sent by SubmitCommand.
   */
  send(
    command: MessageInitShape<typeof CommandSchema>,
    expectedVersion: bigint,
    commandId?: string,
  ): Promise<PlayAccepted>;
  /** Leave the seat: the stream is cancelled, the iteration ends (no error, the messages not yet
   * read dropped) and unanswered sends reject CANCELED. Leaving a `for await` loop early (break,
   * return, throw) closes it too. The game goes on without the seat (its turn clock, if any). */
  close(): void;
}

/**
 * Take a seat at a game over one Play stream (a client with the seat's token): its messages are
 * the game's events as the seat may see them, each exactly once and in order across reconnects,
 * and after each batch the seat's state (its version, whether the game is over, and what
 * `include` asks for; a state may come again at a version already seen: act once per version). It
 * ends when the game is over and its last state is out, or on close() or `signal` (no error
 * then); it throws the decoded CroupierError when a failure no retry can mend ends it (isPermanent:
 * a token, game or request refused) or the retries are spent, after the messages received before.
 * The stream opens at once; messages wait in memory for the caller to read them (one reader).
 * A heartbeatS out of range is a RangeError at once.
 */
export function playSeat(client: GameClient, options: PlayOptions): PlaySeat {
  return new Seat(client, options, heartbeatSeconds(options.heartbeatS));
}

/** The status a PlayRefused names ("FAILED_PRECONDITION") as a Code; UNKNOWN when none. */
function codeOf(status: string): Code {
  const name = status
    .toLowerCase()
    .split("_")
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join("");
  const code = (Code as unknown as Record<string, unknown>)[name];
  return typeof code === "number" ? (code as Code) : Code.Unknown;
}

/**
 * A Play refusal as the CroupierError SubmitCommand would have failed with for it: the status
 * named, the message, and the details the service puts in a status (service/status.py): an
 * ErrorInfo with the reason and metadata, a BadRequest naming the field, a RetryInfo when the
 * metadata says when to come back (retry_after_ms).
 */
export function refusalError(refused: PlayRefused): CroupierError {
  const metadata = { ...refused.metadata };
  const details: NonNullable<ConstructorParameters<typeof ConnectError>[3]> = [
    { desc: ErrorInfoSchema, value: { reason: refused.reason, domain: DOMAIN, metadata } },
  ];
  if (refused.field) {
    details.push({
      desc: BadRequestSchema,
      value: { fieldViolations: [{ field: refused.field, description: refused.message }] },
    });
  }
  const retryAfterMs = Number(metadata["retry_after_ms"] ?? Number.NaN);
  if (Number.isSafeInteger(retryAfterMs) && retryAfterMs >= 0) {
    const seconds = Math.floor(retryAfterMs / MS_PER_SECOND);
    const nanos = (retryAfterMs % MS_PER_SECOND) * 1_000_000;
    details.push({
      desc: RetryInfoSchema,
      value: { retryDelay: { seconds: BigInt(seconds), nanos } },
    });
  }
  return new CroupierError(
    new ConnectError(refused.message, codeOf(refused.status), undefined, details),
  );
}

type Request = MessageInitShape<typeof PlayRequestSchema>;

/** One connection's requests: the join, then commands as they are sent, until it is done with. */
class Outbox implements AsyncIterable<Request> {
  private readonly items: Request[] = [];
  private wake: (() => void) | undefined;
  private done = false;

  push(item: Request): void {
    if (!this.done) {
      this.items.push(item);
      this.wake?.();
    }
  }

  end(): void {
    this.done = true;
    this.wake?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Request> {
    for (;;) {
      const item = this.items.shift();
      if (item !== undefined) {
        yield item;
      } else if (this.done) {
        return;
      } else {
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
      }
    }
  }
}

/** A command sent and not yet answered. */
interface Pending {
  readonly commandId: string;
  readonly expectedVersion: bigint;
  readonly command: MessageInitShape<typeof CommandSchema>;
  readonly answer: Promise<PlayAccepted>;
  resolve(accepted: PlayAccepted): void;
  reject(error: CroupierError): void;
  /** Refusals retried so far (sendRetry). */
  refusals: number;
  /** Set while it waits to be sent again after a passing refusal. */
  timer: ReturnType<typeof setTimeout> | undefined;
}

class Seat implements PlaySeat {
  /** Aborted by close() and the caller's signal: the stream and the waits between them end. */
  private readonly closer = new AbortController();
  private readonly queue: PlayMessage[] = [];
  private readonly readers = new Set<() => void>();
  /** Sent and not yet answered, by command id, in the order sent. */
  private readonly pending = new Map<string, Pending>();
  /** The open connection's requests, once joined: where commands go. */
  private outbox: Outbox | undefined;
  /** The version of the last event delivered: each join resumes after it. */
  private after: bigint;
  /** A state said the game is over. */
  private finished = false;
  /** No stream will be opened again: the game is over, the seat closed or failed. */
  private done = false;
  /** Why the seat failed, thrown to the reader once the messages before it are read. */
  private failure: CroupierError | undefined;
  private readonly sendPolicy: RetryPolicy;

  constructor(
    private readonly client: GameClient,
    private readonly options: PlayOptions,
    private readonly heartbeatS: number,
  ) {
    this.after = BigInt(options.afterVersion ?? 0n);
    this.sendPolicy = { ...DEFAULT_RETRY, ...options.sendRetry };
    const { signal } = options;
    if (signal?.aborted) {
      this.close();
      return;
    }
    signal?.addEventListener("abort", () => this.close(), { once: true });
    void this.run();
  }

  send(
    command: MessageInitShape<typeof CommandSchema>,
    expectedVersion: bigint,
    commandId: string = randomId(),
  ): Promise<PlayAccepted> {
    const already = this.pending.get(commandId);
    if (already !== undefined) {
      return already.answer;
    }
    if (this.failure !== undefined) {
      return Promise.reject(this.failure);
    }
    if (this.closer.signal.aborted) {
      return Promise.reject(closedError());
    }
    let resolve!: (accepted: PlayAccepted) => void;
    let reject!: (error: CroupierError) => void;
    const answer = new Promise<PlayAccepted>((ok, fail) => {
      resolve = ok;
      reject = fail;
    });
    const entry: Pending = {
      commandId,
      expectedVersion: BigInt(expectedVersion),
      command,
      answer,
      resolve,
      reject,
      refusals: 0,
      timer: undefined,
    };
    if (this.done) {
      // The game's stream ended (the game is over): the service answers the id as it stands.
      this.submitted(entry);
    } else {
      this.pending.set(commandId, entry);
      this.transmit(entry);
    }
    return answer;
  }

  close(): void {
    if (this.closer.signal.aborted) {
      return;
    }
    this.closer.abort(closedError());
    this.queue.length = 0;
    this.finish(closedError());
  }

  [Symbol.asyncIterator](): AsyncIterator<PlayMessage> {
    let thrown = false;
    return {
      next: async (): Promise<IteratorResult<PlayMessage>> => {
        for (;;) {
          const message = this.queue.shift();
          if (message !== undefined) {
            return { value: message, done: false };
          }
          if (this.failure !== undefined && !thrown) {
            thrown = true;
            throw this.failure;
          }
          if (this.done) {
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => this.readers.add(resolve));
        }
      },
      return: async (): Promise<IteratorResult<PlayMessage>> => {
        this.close();
        return { value: undefined, done: true };
      },
    };
  }

  /** The connections, one after another, until the game is over, the seat is closed, or a
   * failure ends it. Never rejects. */
  private async run(): Promise<void> {
    const { gameId, include, headers, contextValues } = this.options;
    const signal = this.closer.signal;
    const reconnects = new Reconnects(
      { ...FOLLOW_RETRY, ...this.options.retry },
      this.options.onRetry,
    );
    try {
      while (!signal.aborted) {
        const alive = new Watchdog(silenceMs(this.heartbeatS), signal);
        const outbox = new Outbox();
        try {
          outbox.push({
            kind: {
              case: "join",
              value: {
                gameId,
                afterVersion: this.after,
                include,
                batched: true,
                heartbeatS: this.heartbeatS,
              },
            },
          });
          const responses = this.client.play(outbox, {
            headers,
            contextValues,
            signal: alive.signal,
          });
          // After the join: the commands not answered on an earlier connection, with their ids and
          // expected versions (applied once whatever became of them), then any sent from now on.
          this.outbox = outbox;
          for (const entry of this.pending.values()) {
            if (entry.timer === undefined) {
              this.transmit(entry);
            }
          }
          for await (const response of responses) {
            alive.feed(); // any message, a heartbeat too, says the connection still carries them
            reconnects.heard(); // the server answers: the next break waits the shortest again
            this.receive(response);
          }
          if (this.finished) {
            this.over();
            return;
          }
          // A stream ended without an error before the game's end (a proxy's doing): a break.
          throw new ConnectError("the stream ended before the game did", Code.Unavailable);
        } catch (thrown) {
          this.outbox = undefined;
          alive.stop(); // no watchdog during the wait below
          if (signal.aborted) {
            return;
          }
          const error = alive.fired ?? decodeError(thrown);
          // Thrown when permanent or the retries are spent; false: closed during the wait.
          if (!(await reconnects.wait(error, signal))) {
            return;
          }
        } finally {
          this.outbox = undefined;
          outbox.end();
          alive.stop();
        }
      }
    } catch (thrown) {
      if (!signal.aborted) {
        this.fail(decodeError(thrown));
      }
    }
  }

  /** Put the command on the open connection, if any; else the next join sends it. */
  private transmit(entry: Pending): void {
    this.outbox?.push({
      kind: {
        case: "command",
        value: {
          commandId: entry.commandId,
          expectedVersion: entry.expectedVersion,
          command: entry.command,
        },
      },
    });
  }

  private receive(response: PlayResponse): void {
    const { kind } = response;
    switch (kind.case) {
      case "event":
        this.event(kind.value);
        break;
      case "state":
        this.state(kind.value);
        break;
      case "batch":
        for (const event of kind.value.events) {
          this.event(event);
        }
        if (kind.value.state !== undefined) {
          this.state(kind.value.state);
        }
        break;
      case "accepted": {
        const entry = this.settle(kind.value.commandId);
        entry?.resolve(kind.value);
        break;
      }
      case "refused":
        this.refused(kind.value);
        break;
      default:
        break; // a heartbeat (or a message of a newer server's)
    }
  }

  private event(event: GameEvent): void {
    // Never one twice, whatever a stream sends again.
    if (event.version <= this.after) {
      return;
    }
    this.after = event.version;
    this.deliver({ case: "event", value: event });
  }

  private state(state: PlayState): void {
    this.finished ||= state.finished;
    this.deliver({ case: "state", value: state });
  }

  private deliver(message: PlayMessage): void {
    this.queue.push(message);
    this.wakeReaders();
  }

  private wakeReaders(): void {
    for (const wake of this.readers) {
      wake();
    }
    this.readers.clear();
  }

  /** The pending command `commandId` taken out of the pending ones (undefined: none such, as
   * for a refusal of a malformed message, which names no command). */
  private settle(commandId: string): Pending | undefined {
    const entry = this.pending.get(commandId);
    if (entry !== undefined) {
      clearTimeout(entry.timer);
      this.pending.delete(commandId);
    }
    return entry;
  }

  private refused(refused: PlayRefused): void {
    const entry = this.pending.get(refused.commandId);
    if (entry === undefined) {
      return;
    }
    const error = refusalError(refused);
    entry.refusals++;
    if (entry.refusals < this.sendPolicy.attempts && isRetryable(error, entry.expectedVersion)) {
      // As submit would: the same id and version again, after the wait (at least the RetryInfo's).
      entry.timer = setTimeout(
        () => {
          entry.timer = undefined;
          if (this.pending.get(entry.commandId) === entry) {
            this.transmit(entry);
          }
        },
        backoffMs(error, entry.refusals, this.sendPolicy),
      );
      return;
    }
    this.settle(entry.commandId);
    entry.reject(error);
  }

  /** The game is over and its stream ended: the reader gets the rest and the end. Commands still
   * unanswered (sent as the stream ended, or whose answer a broken connection took while the
   * command ended the game) are answered by SubmitCommand, which knows whether each id was
   * applied. */
  private over(): void {
    const unanswered = [...this.pending.values()];
    this.finish(undefined);
    for (const entry of unanswered) {
      this.submitted(entry);
    }
  }

  private submitted(entry: Pending): void {
    const { gameId, headers, contextValues, sendRetry } = this.options;
    submit(
      this.client,
      {
        gameId,
        commandId: entry.commandId,
        expectedVersion: entry.expectedVersion,
        command: entry.command,
      },
      { headers, contextValues, retry: sendRetry },
    ).then(
      (answer) =>
        entry.resolve(
          create(PlayAcceptedSchema, {
            commandId: entry.commandId,
            version: answer.version,
            alreadyApplied: answer.alreadyApplied,
          }),
        ),
      (error: unknown) => entry.reject(decodeError(error)),
    );
  }

  private fail(error: CroupierError): void {
    this.failure = error;
    this.finish(error);
  }

  /** No stream from now on: the pending commands rejected with `error` (unless the caller handles
   * them, as over() does), the reader told. */
  private finish(error: CroupierError | undefined): void {
    this.done = true;
    this.outbox?.end();
    this.outbox = undefined;
    for (const entry of this.pending.values()) {
      clearTimeout(entry.timer);
      entry.timer = undefined;
      if (error !== undefined) {
        entry.reject(error);
      }
    }
    this.pending.clear();
    this.wakeReaders();
  }
}

function closedError(): CroupierError {
  return decodeError(new ConnectError("the seat was closed", Code.Canceled));
}
