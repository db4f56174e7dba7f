// submit's and createGame's retry decisions, against a stand-in for the service that fails as ours does (the
// statuses and details of service/status.py): which failures it sends again, with which id.
import assert from "node:assert/strict";
import { test } from "node:test";
import { Code, ConnectError } from "@connectrpc/connect";
import {
  asToken,
  createGame,
  CroupierError,
  DOMAIN,
  endGame,
  ErrorInfoSchema,
  RetryInfoSchema,
  submit,
  type CreateGameResponse,
  type EndGameResponse,
  type GameClient,
  type SubmitCommandResponse,
} from "../src/index.js";

const EXPECTED = 7n;
const FAST = { baseDelayMs: 1, maxDelayMs: 2 };

function failure(
  code: Code,
  reason: string,
  metadata: Record<string, string> = {},
  retryDelayMs?: number,
): ConnectError {
  const details = [{ desc: ErrorInfoSchema, value: { reason, domain: DOMAIN, metadata } }];
  const retry =
    retryDelayMs === undefined
      ? []
      : [
          {
            desc: RetryInfoSchema,
            value: { retryDelay: { seconds: 0n, nanos: retryDelayMs * 1_000_000 } },
          },
        ];
  return new ConnectError(reason, code, undefined, [...details, ...retry]);
}

/** A client whose SubmitCommand fails with `failures` in turn, then answers; it records the
 * command ids it was sent. */
function standIn(failures: ConnectError[]): { client: GameClient; ids: string[] } {
  const ids: string[] = [];
  const client = {
    async submitCommand(request: { commandId: string }): Promise<SubmitCommandResponse> {
      ids.push(request.commandId);
      const next = failures.shift();
      if (next) {
        throw next;
      }
      return { version: EXPECTED + 1n } as SubmitCommandResponse;
    },
  } as unknown as GameClient;
  return { client, ids };
}

const request = { gameId: "g", expectedVersion: EXPECTED, command: {} };

test("UNAVAILABLE and a conflict at the version sent are retried with the same id", async () => {
  const { client, ids } = standIn([
    new ConnectError("gone", Code.Unavailable),
    failure(Code.Aborted, "VERSION_CONFLICT", {
      current_version: String(EXPECTED),
      expected_version: String(EXPECTED),
    }),
  ]);
  const answer = await submit(client, request, { retry: FAST });
  assert.equal(answer.version, EXPECTED + 1n);
  assert.equal(ids.length, 3);
  assert.ok(ids[0]!.length > 0, "a command id is made when none is given");
  assert.deepEqual(new Set(ids).size, 1, "one command id for every attempt");
});

test("a conflict with a newer version is not retried: the command must be chosen again", async () => {
  const { client, ids } = standIn([
    failure(Code.Aborted, "VERSION_CONFLICT", { current_version: String(EXPECTED + 2n) }),
  ]);
  await assert.rejects(
    submit(client, { ...request, commandId: "mine" }, { retry: FAST }),
    (error) => {
      assert.ok(error instanceof CroupierError);
      assert.equal(error.reason, "VERSION_CONFLICT");
      assert.equal(error.currentVersion, EXPECTED + 2n);
      return true;
    },
  );
  assert.deepEqual(ids, ["mine"]);
});

test("a refusal by the rules is never retried", async () => {
  const { client, ids } = standIn([
    failure(Code.FailedPrecondition, "NOT_YOUR_TURN", { rule: "§3.1" }),
  ]);
  await assert.rejects(submit(client, request, { retry: FAST }), (error) => {
    assert.ok(error instanceof CroupierError);
    assert.equal(error.code, Code.FailedPrecondition);
    assert.equal(error.info["rule"], "§3.1");
    return true;
  });
  assert.equal(ids.length, 1);
});

test("RATE_LIMITED waits at least the server's RetryInfo delay", async () => {
  const { client, ids } = standIn([failure(Code.ResourceExhausted, "RATE_LIMITED", {}, 30)]);
  const waits: number[] = [];
  await submit(client, request, { retry: FAST, onRetry: (_, __, waitMs) => waits.push(waitMs) });
  assert.equal(ids.length, 2);
  assert.equal(waits.length, 1);
  assert.ok(waits[0]! >= 30, `waited ${waits[0]} ms, the server asked for 30`);
});

test("the attempts are bounded: the last error is thrown", async () => {
  const { client, ids } = standIn(
    Array.from({ length: 10 }, () => new ConnectError("gone", Code.Unavailable)),
  );
  await assert.rejects(submit(client, request, { retry: { ...FAST, attempts: 3 } }), (error) => {
    assert.ok(error instanceof CroupierError);
    assert.equal(error.code, Code.Unavailable);
    assert.equal(error.reason, "", "a transport failure carries no ErrorInfo");
    return true;
  });
  assert.equal(ids.length, 3);
});

test("CroupierError is a ConnectError, and only decoded errors are CroupierErrors", () => {
  const raw = failure(Code.NotFound, "GAME_NOT_FOUND", { game_id: "g" });
  assert.ok(!(raw instanceof CroupierError));
  const decoded = new CroupierError(raw);
  assert.ok(decoded instanceof ConnectError);
  assert.equal(decoded.code, Code.NotFound);
  assert.equal(decoded.reason, "GAME_NOT_FOUND");
  assert.equal(decoded.info["game_id"], "g");
  assert.equal(ConnectError.from(decoded), decoded);
});

test("createGame resends UNAVAILABLE with one request id, and never a refused request", async () => {
  const ids: string[] = [];
  const failures = [
    new ConnectError("gone", Code.Unavailable),
    failure(Code.InvalidArgument, "REQUEST_ID_REUSED"),
  ];
  const client = {
    async createGame(request: { requestId: string }): Promise<CreateGameResponse> {
      ids.push(request.requestId);
      const next = failures.shift();
      if (next) {
        throw next;
      }
      return { gameId: "made" } as CreateGameResponse;
    },
  } as unknown as GameClient;
  await assert.rejects(createGame(client, { seats: 2 }, { retry: FAST }), (error) => {
    assert.ok(error instanceof CroupierError);
    assert.equal(error.reason, "REQUEST_ID_REUSED");
    return true;
  });
  assert.equal(ids.length, 2);
  assert.ok(ids[0]!.length > 0, "a request id is made when none is given");
  assert.equal(ids[1], ids[0], "one request id for every attempt");
  assert.equal((await createGame(client, { requestId: "mine" }, { retry: FAST })).gameId, "made");
  assert.equal(ids[2], "mine");
});

test("a token source that throws is no connection lost: createGame does not send it again", async () => {
  // Nothing was sent, so no retry can mend it: before, the throw was read as a connection lost
  // (no ErrorInfo) and the call was made again and again, to end UNKNOWN.
  const sent: string[] = [];
  const service = {
    async createGame(request: { requestId: string }): Promise<CreateGameResponse> {
      sent.push(request.requestId);
      return { gameId: "made" } as CreateGameResponse;
    },
  } as unknown as GameClient;
  let asked = 0;
  const studio = asToken(service, () => {
    asked++;
    throw new Error("no studio secret");
  });
  await assert.rejects(createGame(studio, { requestId: "mine" }, { retry: FAST }), (error) => {
    assert.ok(error instanceof CroupierError);
    assert.equal(error.code, Code.Unauthenticated);
    assert.match(error.message, /no studio secret/);
    return true;
  });
  assert.deepEqual([asked, sent.length], [1, 0]);
});

test("endGame resends a lost connection with one command id; a conflict only when no version was named", async () => {
  const ids: string[] = [];
  let failures: ConnectError[] = [];
  const client = {
    async endGame(request: { commandId: string }): Promise<EndGameResponse> {
      ids.push(request.commandId);
      const next = failures.shift();
      if (next) {
        throw next;
      }
      return { version: 9n, alreadyApplied: ids.length > 1 } as EndGameResponse;
    },
  } as unknown as GameClient;
  const end = { gameId: "g", reason: "stuck" };
  // The first attempt ended the game and its answer was lost: the retry is answered as applied.
  failures = [new ConnectError("read ECONNRESET", Code.Aborted), failure(Code.Unavailable, "")];
  const answer = await endGame(client, end, { retry: FAST });
  assert.equal(answer.alreadyApplied, true);
  assert.equal(ids.length, 3);
  assert.ok(ids[0]!.length > 0, "a command id is made when none is given");
  assert.equal(new Set(ids).size, 1, "one command id for every attempt");

  ids.length = 0;
  failures = [failure(Code.Aborted, "VERSION_CONFLICT", { current_version: "8" })];
  await endGame(client, { ...end, commandId: "mine" }, { retry: FAST });
  assert.deepEqual(ids, ["mine", "mine"], "the game as it stands: moves that landed first");

  for (const refusal of [
    failure(Code.Aborted, "VERSION_CONFLICT", { current_version: "8" }),
    failure(Code.FailedPrecondition, "GAME_OVER"),
  ]) {
    ids.length = 0;
    failures = [refusal];
    await assert.rejects(
      endGame(client, { ...end, expectedVersion: 7n }, { retry: FAST }),
      (error) => error instanceof CroupierError && error.reason === refusal.rawMessage,
    );
    assert.equal(ids.length, 1, `${refusal.rawMessage} at a version named is not sent again`);
  }
});

test("a connection lost under the call is retried with the same id; the caller's cancel is not", async () => {
  // connect-node: a stream closed under the call is CANCELED, a reset connection ABORTED, with
  // no ErrorInfo; the service's own ABORTED always names its reason.
  const { client, ids } = standIn([
    new ConnectError("http/2 stream closed with error code CANCEL", Code.Canceled),
    new ConnectError("read ECONNRESET", Code.Aborted),
  ]);
  const answer = await submit(client, request, { retry: FAST });
  assert.equal(answer.version, EXPECTED + 1n);
  assert.equal(ids.length, 3);
  assert.equal(new Set(ids).size, 1, "one command id for every attempt");

  const cancelled = new AbortController();
  cancelled.abort();
  const mine = standIn([new ConnectError("the caller cancelled", Code.Canceled)]);
  await assert.rejects(
    submit(mine.client, request, { retry: FAST, signal: cancelled.signal }),
    (error) => error instanceof CroupierError && error.code === Code.Canceled,
  );
  assert.equal(mine.ids.length, 1, "the caller's own cancellation is not sent again");
});
