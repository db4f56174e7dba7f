// followGame against a stand-in for StreamEvents (connect's in-memory router transport, with the
// package's decodeErrors as a real connection has it): streams that break, stall or are refused,
// and what the follower makes of them. Every wait is bounded (each test's timeout); nothing is
// asserted about speed.
import assert from "node:assert/strict";
import { setTimeout as delay } from "node:timers/promises";
import { describe, test } from "node:test";
import { createClient, createRouterTransport, type HandlerContext } from "@connectrpc/connect";
import type { MessageInitShape } from "@bufbuild/protobuf";
import {
  asToken,
  bearer,
  Code,
  ConnectError,
  CroupierError,
  decodeErrors,
  DOMAIN,
  ErrorInfoSchema,
  followGame,
  GameService,
  SILENCE_HEARTBEATS,
  type FollowMessage,
  type GameClient,
  type StreamEventsRequest,
  type StreamEventsResponseSchema,
} from "../src/index.js";

type Message = MessageInitShape<typeof StreamEventsResponseSchema>;
/** One StreamEvents call of the stand-in: its messages, given the request and which call it is. */
type Script = (
  request: StreamEventsRequest,
  call: number,
  context: HandlerContext,
) => AsyncIterable<Message>;

const GAME = "g1";
const FAST = { baseDelayMs: 1, maxDelayMs: 2 };
const TIMEOUT_MS = 30_000;

/** A client whose StreamEvents runs `script`; it records each call's request. */
function standIn(script: Script): { client: GameClient; requests: StreamEventsRequest[] } {
  const requests: StreamEventsRequest[] = [];
  const transport = createRouterTransport(
    (router) => {
      router.service(GameService, {
        streamEvents(request, context) {
          requests.push(request);
          return script(request, requests.length, context);
        },
      });
    },
    { transport: { interceptors: [decodeErrors] } },
  );
  return { client: createClient(GameService, transport), requests };
}

function event(version: bigint): Message {
  return { event: { gameId: GAME, version } };
}

function state(version: bigint, finished = false): Message {
  return { state: { version, finished } };
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

/** Everything followGame yields, in order (or the error it ends with). */
async function collect(messages: AsyncIterable<FollowMessage>): Promise<FollowMessage[]> {
  const out: FollowMessage[] = [];
  for await (const message of messages) out.push(message);
  return out;
}

function versions(messages: FollowMessage[], kind: FollowMessage["case"]): bigint[] {
  return messages.filter((m) => m.case === kind).map((m) => m.value.version);
}

describe("followGame", { timeout: TIMEOUT_MS }, () => {
  test("a broken stream resumes after the last event, not a state: each event once", async () => {
    const { client, requests } = standIn(async function* (request, call) {
      if (call === 1) {
        assert.equal(request.afterVersion, 0n);
        yield event(1n);
        yield event(2n);
        yield state(5n); // ahead of the events sent: resuming after it would lose 3 to 5
        yield event(3n);
        throw failure(Code.Unavailable); // a network's failure: no ErrorInfo
      }
      if (call === 2) {
        yield event(request.afterVersion + 1n);
        yield state(5n);
        // A server that shuts down, naming the last version it sent.
        throw failure(Code.Unavailable, "SERVER_SHUTTING_DOWN", {
          after_version: String(request.afterVersion + 1n),
        });
      }
      for (let v = request.afterVersion + 1n; v <= 6n; v++) yield event(v);
      yield state(6n, true);
    });
    const retried: CroupierError[] = [];
    const got = await collect(
      followGame(client, {
        gameId: GAME,
        include: { toAct: true },
        retry: FAST,
        onRetry: (error) => retried.push(error),
      }),
    );
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n, 4n, 5n, 6n]);
    assert.deepEqual(versions(got, "state"), [5n, 5n, 6n]);
    assert.deepEqual(
      requests.map((r) => r.afterVersion),
      [0n, 3n, 4n],
      "each stream resumes after the last event delivered",
    );
    assert.deepEqual(
      requests.map((r) => r.heartbeatS),
      [15, 15, 15],
      "heartbeats are asked for (15 s by default)",
    );
    assert.ok(requests.every((r) => r.include?.toAct === true && r.gameId === GAME));
    assert.deepEqual(
      retried.map((e) => [e.code, e.reason]),
      [
        [Code.Unavailable, ""],
        [Code.Unavailable, "SERVER_SHUTTING_DOWN"],
      ],
    );
    assert.ok(retried.every((e) => e instanceof CroupierError));
  });

  test("an event a stream sends again is not delivered again", async () => {
    const { client, requests } = standIn(async function* (_request, call) {
      // A stream that starts from the first event whatever it is asked.
      for (let v = 1n; v <= 4n; v++) {
        yield event(v);
        if (call === 1 && v === 2n) throw failure(Code.Unavailable);
      }
    });
    const got = await collect(followGame(client, { gameId: GAME, afterVersion: 1n, retry: FAST }));
    assert.deepEqual(versions(got, "event"), [2n, 3n, 4n]);
    assert.deepEqual(
      requests.map((r) => r.afterVersion),
      [1n, 2n],
    );
  });

  test("a stream silent for longer than its heartbeats allow is reopened", async () => {
    const heartbeatS = 1;
    let stalledAborted = false;
    const { client, requests } = standIn(async function* (request, call, context) {
      if (call === 1) {
        yield event(1n);
        // Heartbeats a fifth of the allowed silence apart, for longer than that silence: they
        // keep the stream alive, and are not delivered.
        const silenceMs = heartbeatS * SILENCE_HEARTBEATS * 1000;
        for (let spent = 0; spent < silenceMs * 1.5; spent += silenceMs / 5) {
          await delay(silenceMs / 5);
          yield { heartbeat: {} };
        }
        yield event(2n);
        await aborted(context.signal); // then silence, with the connection open
        stalledAborted = true;
        return;
      }
      for (let v = request.afterVersion + 1n; v <= 3n; v++) yield event(v);
    });
    const retried: CroupierError[] = [];
    const got = await collect(
      followGame(client, {
        gameId: GAME,
        heartbeatS,
        retry: FAST,
        onRetry: (error) => retried.push(error),
      }),
    );
    assert.deepEqual(
      got.map((m) => m.case),
      ["event", "event", "event"],
      "heartbeats are consumed",
    );
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n]);
    assert.deepEqual(
      requests.map((r) => [r.afterVersion, r.heartbeatS]),
      [
        [0n, 1],
        [2n, 1],
      ],
    );
    assert.ok(stalledAborted, "the silent stream was cancelled");
    assert.equal(retried.length, 1);
    assert.equal(retried[0]!.code, Code.Unavailable);
    assert.match(retried[0]!.rawMessage, /no message for 2\.5 s/);
  });

  test("a message held by a slow consumer is no silence of the stream's", async () => {
    const { client, requests } = standIn(async function* () {
      yield event(1n);
      yield event(2n);
    });
    const got: bigint[] = [];
    for await (const message of followGame(client, { gameId: GAME, heartbeatS: 1 })) {
      got.push(message.value.version);
      if (got.length === 1) await delay(SILENCE_HEARTBEATS * 1000 * 1.5);
    }
    assert.deepEqual(got, [1n, 2n]);
    assert.equal(requests.length, 1, "not reopened");
  });

  for (const [code, reason] of [
    [Code.Unauthenticated, "INVALID_TOKEN"],
    [Code.PermissionDenied, "TOKEN_FOR_OTHER_GAME"],
    [Code.NotFound, "GAME_NOT_FOUND"],
    [Code.InvalidArgument, "OUT_OF_RANGE"],
    [Code.FailedPrecondition, "SOME_PRECONDITION"],
  ] as const) {
    test(`${Code[code]} is given up at once, with its reason`, async () => {
      const { client, requests } = standIn(async function* (_request, call) {
        if (call === 1) {
          yield event(1n);
          throw failure(Code.Unavailable);
        }
        throw failure(code, reason);
      });
      const retried: Code[] = [];
      const got: FollowMessage[] = [];
      const error = await collect(
        (async function* () {
          for await (const message of followGame(client, {
            gameId: GAME,
            retry: FAST,
            onRetry: (e) => retried.push(e.code),
          })) {
            got.push(message);
            yield message;
          }
        })(),
      ).then(
        () => assert.fail("followGame ended without the error"),
        (thrown: unknown) => thrown,
      );
      assert.ok(error instanceof CroupierError);
      assert.equal(error.code, code);
      assert.equal(error.reason, reason);
      assert.equal(error.domain, DOMAIN);
      assert.deepEqual(versions(got, "event"), [1n]);
      assert.equal(requests.length, 2, "not tried again");
      assert.deepEqual(retried, [Code.Unavailable]);
    });
  }

  test("the retries spent, the last failure is thrown", async () => {
    const { client, requests } = standIn(async function* () {
      yield* [];
      throw failure(Code.Unavailable, "STORE_UNAVAILABLE");
    });
    await assert.rejects(
      collect(followGame(client, { gameId: GAME, retry: { ...FAST, attempts: 3 } })),
      (error: unknown) =>
        error instanceof CroupierError &&
        error.code === Code.Unavailable &&
        error.reason === "STORE_UNAVAILABLE",
    );
    assert.equal(requests.length, 3);
  });

  test("the caller's signal ends it, on an open stream or during a retry's wait", async () => {
    // On an open stream: the stream is cancelled, and the iteration ends without an error.
    const open = new AbortController();
    let cancelled = false;
    const { client } = standIn(async function* (_request, _call, context) {
      yield event(1n);
      await aborted(context.signal);
      cancelled = true;
    });
    const got: FollowMessage[] = [];
    for await (const message of followGame(client, { gameId: GAME, signal: open.signal })) {
      got.push(message);
      open.abort();
    }
    assert.deepEqual(versions(got, "event"), [1n]);
    for (let i = 0; !cancelled && i < 100; i++) await delay(10); // bounded: a second at most
    assert.ok(cancelled, "the stream was cancelled");

    // During the wait before a retry (a minute long): it ends at once.
    const waiting = new AbortController();
    const broken = standIn(async function* () {
      yield* [];
      throw failure(Code.Unavailable);
    });
    const done = collect(
      followGame(broken.client, {
        gameId: GAME,
        signal: waiting.signal,
        retry: { baseDelayMs: 60_000, maxDelayMs: 60_000 },
        onRetry: () => waiting.abort(),
      }),
    );
    assert.deepEqual(await done, []);
    assert.equal(broken.requests.length, 1);
  });

  test("a token source is asked again for each stream: no expired token on a reopened one", async () => {
    // A studio's backend follows its games for longer than a studio token lives: the server
    // refuses an expired one when a stream opens (TOKEN_EXPIRED, permanent), so each reopened
    // stream must carry a token minted for it.
    const sent: string[] = [];
    const transport = createRouterTransport(
      (router) => {
        router.service(GameService, {
          async *streamEvents(request, context) {
            const token = context.requestHeader.get("authorization") ?? "";
            sent.push(token);
            if (token !== `Bearer studio-${sent.length}`) {
              throw failure(Code.Unauthenticated, "TOKEN_EXPIRED");
            }
            yield event(request.afterVersion + 1n);
            if (sent.length < 3) throw failure(Code.Unavailable);
          },
        });
      },
      { transport: { interceptors: [decodeErrors, bearer()] } },
    );
    let minted = 0;
    const studio = asToken(createClient(GameService, transport), () => `studio-${++minted}`);
    const got = await collect(followGame(studio, { gameId: GAME, retry: FAST }));
    assert.deepEqual(versions(got, "event"), [1n, 2n, 3n]);
    assert.deepEqual(sent, ["Bearer studio-1", "Bearer studio-2", "Bearer studio-3"]);
  });

  test("a token source that throws ends the follow at once: no reconnect can mend it", async () => {
    // Its failure is no connection lost (nothing was sent): before, it was taken for one, with
    // no ErrorInfo, and the stream reopened for ever (FOLLOW_RETRY), each time failing again.
    const { client, requests } = standIn(async function* (request) {
      yield event(request.afterVersion + 1n);
    });
    let asked = 0;
    const retried: CroupierError[] = [];
    const studio = asToken(client, () => {
      asked++;
      throw new Error("CROUPIER_SECRET is not set");
    });
    await assert.rejects(
      collect(
        followGame(studio, {
          gameId: GAME,
          retry: { ...FAST, attempts: 5 },
          onRetry: (e) => retried.push(e),
        }),
      ),
      (error) =>
        error instanceof CroupierError &&
        error.code === Code.Unauthenticated &&
        error.message.includes("CROUPIER_SECRET is not set"),
    );
    assert.deepEqual([asked, requests.length, retried.length], [1, 0, 0]);
  });

  test("a heartbeat the server would refuse is a RangeError at once", () => {
    const { client, requests } = standIn(async function* () {});
    for (const heartbeatS of [0, 0.5, 301, Number.NaN]) {
      assert.throws(() => followGame(client, { gameId: GAME, heartbeatS }), RangeError);
    }
    assert.equal(requests.length, 0);
  });
});
