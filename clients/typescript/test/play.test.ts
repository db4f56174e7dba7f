// playSeat against a stand-in for Play (connect's in-memory router transport, with the package's
// decodeErrors as a real connection has it): streams that break, stall, end or are refused with
// commands in flight, and what the seat makes of them. Every wait is bounded (each test's
// timeout); nothing is asserted about speed.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { describe, test } from "node:test";
import { createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  BadRequestSchema,
  Code,
  ConnectError,
  CroupierError,
  decodeErrors,
  DOMAIN,
  ErrorInfoSchema,
  GameService,
  playSeat,
  refusalError,
  RetryInfoSchema,
  SILENCE_HEARTBEATS,
  submit,
  type GameClient,
  type PlayAccepted,
  type PlayCommand,
  type PlayJoin,
  type PlayMessage,
  type PlayRequest,
  type PlayResponseSchema,
  type SubmitCommandRequest,
  type SubmitCommandResponseSchema,
} from "../src/index.js";

type Response = MessageInitShape<typeof PlayResponseSchema>;

/** One Play call of the stand-in, from the server's side: its join already read, the commands
 * that follow it to read (`next`), and the signal the call ends with. */
interface Call {
  readonly number: number;
  readonly join: PlayJoin;
  /** The next command the client sends on this call. */
  command(): Promise<PlayCommand>;
  readonly signal: AbortSignal;
}
type Script = (call: Call) => AsyncIterable<Response>;

const GAME = "g1";
const FAST = { baseDelayMs: 1, maxDelayMs: 2 };
const TIMEOUT_MS = 30_000;
/** A command of any kind: the stand-in never looks inside. */
const MOVE = { game: { case: "gin", value: { move: { case: "drawStock", value: {} } } } } as const;

interface StandIn {
  readonly client: GameClient;
  /** Every Play call's requests, as the stand-in read them, by call. */
  readonly calls: PlayRequest[][];
  readonly submitted: SubmitCommandRequest[];
}

/** A client whose Play runs `script` (and whose SubmitCommand answers `submitted`). */
function standIn(
  script: Script,
  submitted: (
    request: SubmitCommandRequest,
  ) => MessageInitShape<typeof SubmitCommandResponseSchema> = () => {
    throw new ConnectError("no SubmitCommand here", Code.Unimplemented);
  },
): StandIn {
  const calls: PlayRequest[][] = [];
  const submits: SubmitCommandRequest[] = [];
  const transport = createRouterTransport(
    (router) => {
      router.service(GameService, {
        async *play(requests: AsyncIterable<PlayRequest>, context: HandlerContext) {
          const seen: PlayRequest[] = [];
          calls.push(seen);
          const reader = requests[Symbol.asyncIterator]();
          const read = async (): Promise<PlayRequest> => {
            const next = await reader.next();
            assert.ok(!next.done, "the client hung up");
            seen.push(next.value);
            return next.value;
          };
          const first = await read();
          assert.equal(first.kind.case, "join", "the first message joins");
          const call: Call = {
            number: calls.length,
            join: first.kind.value,
            signal: context.signal,
            async command() {
              const request = await read();
              assert.equal(request.kind.case, "command");
              return request.kind.value;
            },
          };
          yield* script(call);
        },
        submitCommand(request) {
          submits.push(request);
          return submitted(request);
        },
      });
    },
    { transport: { interceptors: [decodeErrors] } },
  );
  return { client: createClient(GameService, transport), calls, submitted: submits };
}

function event(version: bigint, commandId = "") {
  return { gameId: GAME, version, commandId };
}

/** A batch: these events and the state after them (at the last event's version, unless given). */
function batch(versions: bigint[], commandId = "", stateVersion?: bigint, finished = false) {
  return {
    kind: {
      case: "batch",
      value: {
        events: versions.map((v) => event(v, commandId)),
        state: { version: stateVersion ?? versions.at(-1) ?? 0n, finished },
      },
    },
  } as const satisfies Response;
}

function accepted(commandId: string, version: bigint, alreadyApplied = false): Response {
  return { kind: { case: "accepted", value: { commandId, version, alreadyApplied } } };
}

function failure(code: Code, reason = "", metadata: Record<string, string> = {}): ConnectError {
  const details = reason
    ? [{ desc: ErrorInfoSchema, value: { reason, domain: DOMAIN, metadata } }]
    : [];
  return new ConnectError(reason || "connection lost", code, undefined, details);
}

/** Resolves when `signal` aborts: a stream that stalls, open and silent. */
function aborted(signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    if (signal.aborted) done();
    signal.addEventListener("abort", () => done(), { once: true });
  });
}

function versions(messages: PlayMessage[], kind: PlayMessage["case"]): bigint[] {
  return messages.filter((m) => m.case === kind).map((m) => m.value.version);
}

function joins(stand: StandIn): bigint[] {
  return stand.calls.map((call) => {
    const join = call[0]!.kind;
    assert.equal(join.case, "join");
    return join.value.afterVersion;
  });
}

/** The commands of each call after its join: [command id, expected version]. */
function commands(stand: StandIn): [string, bigint][][] {
  return stand.calls.map((call) =>
    call.slice(1).map((request) => {
      assert.equal(request.kind.case, "command");
      return [request.kind.value.commandId, request.kind.value.expectedVersion];
    }),
  );
}

describe("playSeat", { timeout: TIMEOUT_MS }, () => {
  test("a command whose answer a break took is resent after the new join: applied once", async () => {
    const stand = standIn(async function* (call) {
      if (call.number === 1) {
        assert.equal(call.join.afterVersion, 0n);
        assert.equal(call.join.batched, true);
        assert.equal(call.join.heartbeatS, 15);
        assert.equal(call.join.include?.legalMoves, true);
        yield batch([1n, 2n]);
        const move = await call.command();
        // Applied: its events go out, then the connection breaks before its answer.
        yield batch([3n, 4n], move.commandId);
        throw failure(Code.Unavailable);
      }
      // The resend, after the join: the service answers it with its first answer.
      const again = await call.command();
      yield accepted(again.commandId, 4n, true);
      yield batch([5n], "", 5n, true);
    });
    const retried: CroupierError[] = [];
    const seat = playSeat(stand.client, {
      gameId: GAME,
      include: { legalMoves: true },
      retry: FAST,
      onRetry: (error) => retried.push(error),
    });
    const got: PlayMessage[] = [];
    let answer: Promise<PlayAccepted> | undefined;
    for await (const message of seat) {
      got.push(message);
      if (message.case === "state" && message.value.version === 2n) {
        answer = seat.send(MOVE, 2n, "move-1");
      }
    }
    const { commandId, version, alreadyApplied } = await answer!;
    assert.deepEqual([commandId, version, alreadyApplied], ["move-1", 4n, true]);
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n, 4n, 5n]);
    assert.deepEqual(versions(got, "state"), [2n, 4n, 5n]);
    assert.deepEqual(joins(stand), [0n, 4n], "each join after the last event delivered");
    assert.deepEqual(
      commands(stand),
      [[["move-1", 2n]], [["move-1", 2n]]],
      "resent with the same id and expected version",
    );
    assert.deepEqual(
      retried.map((e) => e.code),
      [Code.Unavailable],
    );
  });

  test("an answer or a state ahead of the events: rejoined after the last event", async () => {
    let sent: string | undefined;
    const stand = standIn(async function* (call) {
      if (call.number === 1) {
        yield batch([1n, 2n]);
        const move = await call.command();
        sent = move.commandId;
        // The answer comes first; its events (3 to 5) and a state ahead of them are not all out
        // when the stream breaks.
        yield accepted(move.commandId, 5n);
        yield { kind: { case: "event", value: event(3n, move.commandId) } };
        yield { kind: { case: "state", value: { version: 5n } } };
        throw failure(Code.Unavailable, "SERVER_SHUTTING_DOWN", { after_version: "3" });
      }
      yield { kind: { case: "heartbeat", value: {} } };
      // A server that starts again from the first event whatever it is asked: nothing twice.
      yield batch([1n, 2n, 3n, 4n, 5n], "", 5n);
      yield batch([6n], "", 6n, true);
    });
    const seat = playSeat(stand.client, { gameId: GAME, retry: FAST });
    const got: PlayMessage[] = [];
    let answer: Promise<{ version: bigint; alreadyApplied: boolean }> | undefined;
    for await (const message of seat) {
      got.push(message);
      if (message.case === "state" && message.value.version === 2n) answer = seat.send(MOVE, 2n);
    }
    const accepted5 = await answer!;
    assert.equal(accepted5.version, 5n);
    assert.equal(accepted5.alreadyApplied, false);
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n, 4n, 5n, 6n]);
    assert.deepEqual(versions(got, "state"), [2n, 5n, 5n, 6n], "a state may come again");
    assert.deepEqual(joins(stand), [0n, 3n], "not after the answer's version, nor the state's");
    assert.deepEqual(commands(stand), [[[sent!, 2n]], []], "an answered command is not resent");
  });

  test("a command sent while no stream is open goes after the next join", async () => {
    let sendNow: (() => void) | undefined;
    const stand = standIn(async function* (call) {
      if (call.number === 1) {
        yield batch([1n]);
        await new Promise<void>((resume) => (sendNow = resume)); // the test sends meanwhile…
        throw failure(Code.Unavailable);
      }
      const move = await call.command();
      yield batch([2n], move.commandId);
      yield accepted(move.commandId, 2n);
      yield batch([3n], "", 3n, true);
    });
    let onRetry: (() => void) | undefined;
    const retrying = new Promise<void>((resolve) => (onRetry = resolve));
    const seat = playSeat(stand.client, {
      gameId: GAME,
      retry: { baseDelayMs: 200, maxDelayMs: 200 },
      onRetry: () => onRetry!(),
    });
    const iterator = seat[Symbol.asyncIterator]();
    assert.equal((await iterator.next()).value?.case, "event");
    sendNow!();
    await retrying; // …the stream is broken and the seat waits to reopen it
    const answer = seat.send(MOVE, 1n, "while-down");
    const rest: PlayMessage[] = [];
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) {
      rest.push(next.value);
    }
    assert.equal((await answer).version, 2n);
    assert.deepEqual(commands(stand), [[], [["while-down", 1n]]]);
    assert.deepEqual(versions(rest, "event"), [2n, 3n]);
  });

  test("a stream silent for longer than its heartbeats allow is reopened", async () => {
    const heartbeatS = 1;
    let stalledAborted = false;
    const stand = standIn(async function* (call) {
      if (call.number === 1) {
        yield batch([1n]);
        // Heartbeats a fifth of the allowed silence apart, for longer than that silence: they
        // keep the stream alive, and are not delivered.
        const silenceMs = heartbeatS * SILENCE_HEARTBEATS * 1000;
        for (let spent = 0; spent < silenceMs * 1.5; spent += silenceMs / 5) {
          await delay(silenceMs / 5);
          yield { kind: { case: "heartbeat", value: {} } };
        }
        yield batch([2n]);
        await aborted(call.signal); // then silence, with the connection open
        stalledAborted = true;
        return;
      }
      yield batch([3n], "", 3n, true);
    });
    const retried: CroupierError[] = [];
    const got: PlayMessage[] = [];
    const seat = playSeat(stand.client, {
      gameId: GAME,
      heartbeatS,
      retry: FAST,
      onRetry: (error) => retried.push(error),
    });
    for await (const message of seat) got.push(message);
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n]);
    assert.deepEqual(versions(got, "state"), [1n, 2n, 3n], "heartbeats are consumed");
    assert.deepEqual(
      stand.calls.map((c) => (c[0]!.kind.value as PlayJoin).heartbeatS),
      [1, 1],
    );
    assert.deepEqual(joins(stand), [0n, 2n]);
    assert.ok(stalledAborted, "the silent stream was cancelled");
    assert.equal(retried.length, 1);
    assert.equal(retried[0]!.code, Code.Unavailable);
    assert.match(retried[0]!.rawMessage, /no message for 2\.5 s/);
  });

  test("a stream that ends before the game's end is joined again", async () => {
    const stand = standIn(async function* (call) {
      if (call.number === 1) {
        yield batch([1n]); // then it ends, OK, though no state said the game is over
        return;
      }
      yield batch([2n], "", 2n, true);
    });
    const got: PlayMessage[] = [];
    for await (const m of playSeat(stand.client, { gameId: GAME, retry: FAST })) got.push(m);
    assert.deepEqual(versions(got, "event"), [1n, 2n]);
    assert.deepEqual(joins(stand), [0n, 1n]);
  });

  for (const [code, reason] of [
    [Code.Unauthenticated, "INVALID_TOKEN"],
    [Code.PermissionDenied, "TOKEN_FOR_OTHER_GAME"],
    [Code.NotFound, "GAME_NOT_FOUND"],
    [Code.InvalidArgument, "OUT_OF_RANGE"],
  ] as const) {
    test(`${Code[code]} ends it at once: its reason thrown, sends rejected`, async () => {
      const stand = standIn(async function* (call) {
        if (call.number === 1) {
          yield batch([1n]);
          await call.command(); // a command in flight as the connection breaks
          throw failure(Code.Unavailable);
        }
        yield* [];
        throw failure(code, reason);
      });
      const retried: Code[] = [];
      const seat = playSeat(stand.client, {
        gameId: GAME,
        retry: FAST,
        onRetry: (e) => retried.push(e.code),
      });
      const got: PlayMessage[] = [];
      let answer: Promise<unknown> | undefined;
      const error = await (async () => {
        for await (const message of seat) {
          got.push(message);
          answer ??= seat.send(MOVE, 1n);
        }
      })().then(
        () => assert.fail("playSeat ended without the error"),
        (thrown: unknown) => thrown,
      );
      assert.ok(error instanceof CroupierError);
      assert.equal(error.code, code);
      assert.equal(error.reason, reason);
      assert.equal(error.domain, DOMAIN);
      assert.deepEqual(versions(got, "event"), [1n]);
      assert.equal(stand.calls.length, 2, "not tried again");
      assert.deepEqual(retried, [Code.Unavailable]);
      await assert.rejects(answer!, (e: unknown) => e === error, "the pending send rejected");
      await assert.rejects(seat.send(MOVE, 1n), (e: unknown) => e === error, "and a later one");
    });
  }

  test("the retries spent, the last failure is thrown", async () => {
    const stand = standIn(async function* () {
      yield* [];
      throw failure(Code.Unavailable, "STORE_UNAVAILABLE");
    });
    const seat = playSeat(stand.client, { gameId: GAME, retry: { ...FAST, attempts: 3 } });
    await assert.rejects(
      (async () => {
        for await (const _ of seat);
      })(),
      (error: unknown) =>
        error instanceof CroupierError &&
        error.code === Code.Unavailable &&
        error.reason === "STORE_UNAVAILABLE",
    );
    assert.equal(stand.calls.length, 3);
  });

  test("a refusal rejects the send with what submit() throws for it", async () => {
    // The same refusals, as SubmitCommand's status (service/status.py: ErrorInfo, BadRequest for
    // the field) and as Play's PlayRefused.
    const refusals: {
      status: string;
      code: Code;
      reason: string;
      message: string;
      metadata: Record<string, string>;
      field: string;
    }[] = [
      {
        status: "FAILED_PRECONDITION",
        code: Code.FailedPrecondition,
        reason: "TAKE_OR_PASS",
        message: "take the upcard or pass",
        metadata: { rule: "gin §3.1" },
        field: "",
      },
      {
        status: "INVALID_ARGUMENT",
        code: Code.InvalidArgument,
        reason: "UNKNOWN_CARD",
        message: "no such card: ZZ",
        metadata: {},
        field: "command.gin.discard.card",
      },
      {
        status: "ABORTED",
        code: Code.Aborted,
        reason: "VERSION_CONFLICT",
        message: "the game is at version 7",
        metadata: { current_version: "7" },
        field: "",
      },
    ];
    const stand = standIn(
      async function* (call) {
        yield batch([1n]);
        for (const { code: _, ...refusal } of refusals) {
          const move = await call.command();
          yield { kind: { case: "refused", value: { commandId: move.commandId, ...refusal } } };
        }
        yield batch([2n], "", 2n, true);
      },
      (request) => {
        const refusal = refusals[Number(request.commandId)]!;
        const details: NonNullable<ConstructorParameters<typeof ConnectError>[3]> = [
          {
            desc: ErrorInfoSchema,
            value: { reason: refusal.reason, domain: DOMAIN, metadata: refusal.metadata },
          },
        ];
        if (refusal.field) {
          details.push({
            desc: BadRequestSchema,
            value: { fieldViolations: [{ field: refusal.field, description: refusal.message }] },
          });
        }
        throw new ConnectError(refusal.message, refusal.code, undefined, details);
      },
    );
    const seat = playSeat(stand.client, { gameId: GAME, retry: FAST });
    const iterator = seat[Symbol.asyncIterator]();
    await iterator.next();
    for (const [index, refusal] of refusals.entries()) {
      const id = String(index);
      const played = await seat.send(MOVE, 1n, id).then(
        () => assert.fail("accepted"),
        (e: unknown) => e,
      );
      const submitted = await submit(stand.client, {
        gameId: GAME,
        commandId: id,
        expectedVersion: 1n,
        command: MOVE,
      }).then(
        () => assert.fail("accepted"),
        (e: unknown) => e,
      );
      for (const error of [played, submitted]) {
        assert.ok(error instanceof CroupierError);
        assert.equal(error.code, refusal.code);
      }
      const shape = (e: CroupierError) => ({
        code: e.code,
        message: e.message,
        rawMessage: e.rawMessage,
        reason: e.reason,
        domain: e.domain,
        info: e.info,
        field: e.field,
        fieldViolations: e.fieldViolations,
        retryDelayMs: e.retryDelayMs,
        currentVersion: e.currentVersion,
      });
      assert.deepEqual(shape(played as CroupierError), shape(submitted as CroupierError));
    }
    assert.equal(stand.submitted.length, refusals.length);
    assert.equal(stand.calls.length, 1, "a refusal leaves the stream open");
    seat.close();
  });

  test("a passing refusal is sent again with the same id, after its delay", async () => {
    const stand = standIn(async function* (call) {
      yield batch([1n]);
      const first = await call.command();
      yield {
        kind: {
          case: "refused",
          value: {
            commandId: first.commandId,
            status: "RESOURCE_EXHAUSTED",
            reason: "RATE_LIMITED",
            message: "too fast",
            metadata: { retry_after_ms: "30" },
          },
        },
      };
      const again = await call.command();
      yield batch([2n], again.commandId);
      yield accepted(again.commandId, 2n);
      yield batch([3n], "", 3n, true);
    });
    const seat = playSeat(stand.client, { gameId: GAME, sendRetry: FAST });
    const iterator = seat[Symbol.asyncIterator]();
    await iterator.next();
    const started = Date.now();
    const answer = await seat.send(MOVE, 1n, "limited");
    assert.ok(Date.now() - started >= 25, "not before the RetryInfo's delay");
    assert.equal(answer.version, 2n);
    assert.deepEqual(commands(stand), [
      [
        ["limited", 1n],
        ["limited", 1n],
      ],
    ]);
    seat.close();
  });

  test("a command unanswered when the game's stream ends is answered by SubmitCommand", async () => {
    // The command ended the game; the stream that carried its answer broke, and the new one ends
    // (the game is over) before the resend is read: SubmitCommand with the same id tells.
    const stand = standIn(
      async function* (call) {
        if (call.number === 1) {
          yield batch([1n]);
          await call.command();
          throw failure(Code.Unavailable);
        }
        yield batch([2n, 3n], "last", 3n, true);
      },
      (request) => ({ version: 3n, alreadyApplied: request.commandId === "last" }),
    );
    const seat = playSeat(stand.client, { gameId: GAME, retry: FAST });
    let answer: Promise<{ version: bigint; alreadyApplied: boolean }> | undefined;
    const got: PlayMessage[] = [];
    for await (const message of seat) {
      got.push(message);
      answer ??= seat.send(MOVE, 1n, "last");
    }
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n]);
    const last = await answer!;
    assert.equal(last.version, 3n);
    assert.equal(last.alreadyApplied, true);
    assert.deepEqual(
      stand.submitted.map((r) => [r.commandId, r.expectedVersion]),
      [["last", 1n]],
    );
  });

  test("close() ends the iteration, cancels the stream and rejects unanswered sends", async () => {
    let cancelled = false;
    const stand = standIn(async function* (call) {
      yield batch([1n]);
      await call.command();
      await aborted(call.signal);
      cancelled = true;
    });
    const seat = playSeat(stand.client, { gameId: GAME });
    const got: PlayMessage[] = [];
    let answer: Promise<unknown> | undefined;
    for await (const message of seat) {
      got.push(message);
      if (answer === undefined) {
        answer = seat.send(MOVE, 1n);
        await delay(50);
        seat.close();
      }
    }
    assert.deepEqual(versions(got, "event"), [1n]);
    await assert.rejects(
      answer!,
      (e: unknown) => e instanceof CroupierError && e.code === Code.Canceled,
    );
    await assert.rejects(
      seat.send(MOVE, 1n),
      (e: unknown) => e instanceof CroupierError && e.code === Code.Canceled,
    );
    for (let i = 0; !cancelled && i < 100; i++) await delay(10); // bounded: a second at most
    assert.ok(cancelled, "the stream was cancelled");
  });

  test("the caller's signal, or leaving the loop, closes the seat; even during a wait", async () => {
    const waiting = new AbortController();
    const broken = standIn(async function* () {
      yield* [];
      throw failure(Code.Unavailable);
    });
    const seat = playSeat(broken.client, {
      gameId: GAME,
      signal: waiting.signal,
      retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
      onRetry: () => waiting.abort(),
    });
    const got: PlayMessage[] = [];
    for await (const message of seat) got.push(message);
    assert.deepEqual(got, []);
    assert.equal(broken.calls.length, 1);

    const open = standIn(async function* (call) {
      yield batch([1n, 2n]);
      await aborted(call.signal);
    });
    const left = playSeat(open.client, { gameId: GAME });
    for await (const message of left) {
      assert.equal(message.case, "event");
      break;
    }
    await assert.rejects(
      left.send(MOVE, 2n),
      (e: unknown) => e instanceof CroupierError && e.code === Code.Canceled,
    );
  });

  test("a heartbeat the server would refuse is a RangeError at once", () => {
    const stand = standIn(async function* () {});
    for (const heartbeatS of [0, 0.5, 301, Number.NaN]) {
      assert.throws(() => playSeat(stand.client, { gameId: GAME, heartbeatS }), RangeError);
    }
    assert.equal(stand.calls.length, 0);
  });

  test("a refusal's RetryInfo comes from its retry_after_ms", async () => {
    const error = refusalError({
      commandId: "x",
      status: "UNAVAILABLE",
      reason: "STORE_UNAVAILABLE",
      message: "the store cannot be reached",
      metadata: { retry_after_ms: "1500" },
      field: "",
    } as never);
    assert.equal(error.code, Code.Unavailable);
    assert.equal(error.retryDelayMs, 1500);
    assert.equal(error.findDetails(RetryInfoSchema).length, 1);
  });
});
