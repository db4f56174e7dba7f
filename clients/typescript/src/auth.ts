// Credentials: every call sends one `authorization: Bearer <token>` entry (proto/croupier/v1/
// service.proto): the studio token for CreateGame, a seat token for a seat's calls, a player
// token for recall. One connection serves every seat: the token travels with each call.
import {
  Code,
  ConnectError,
  createContextKey,
  createContextValues,
  type CallOptions,
  type Client,
  type ContextKey,
  type ContextValues,
  type Interceptor,
} from "@connectrpc/connect";
import type { GameService } from "./gen/croupier/v1/service_pb.js";

/** The service's client, as connect's createClient makes it. */
export type GameClient = Client<typeof GameService>;

/** A token, or a function that gives the token to send now, called once per call (and so once
 * per stream that followGame or playSeat opens again): a studio's backend mints short-lived
 * studio tokens, and a stream followed for longer than one lives is reopened with a fresh one
 * rather than refused TOKEN_EXPIRED. A function that throws fails the call, unsent, as
 * UNAUTHENTICATED (its error the `cause`): no retry or reopening sends it again. */
export type TokenSource = string | (() => string);

function tokenOf(source: TokenSource): string {
  if (typeof source !== "function") {
    return source;
  }
  try {
    return source();
  } catch (error) {
    // Not a connection lost (a failure without an ErrorInfo, which the retries send again): no
    // token, so nothing was sent, and no attempt of the same call would have one.
    throw new ConnectError(
      `the token source failed: ${error instanceof Error ? error.message : String(error)}`,
      Code.Unauthenticated,
      undefined,
      undefined,
      error,
    );
  }
}

/** The token of one call (set by withToken; the bearer interceptor sends it). */
export const TOKEN = createContextKey<string | undefined>(undefined, {
  description: "the Croupier token (studio, seat or player) of one call",
});

const AUTHORIZATION = "authorization";

/**
 * An interceptor that sends `authorization: Bearer <token>`: the call's own token (withToken, or a
 * client from asToken), else `fallback` (a function: called for each call). A call that already
 * carries an authorization header is left alone (two entries would be refused:
 * DUPLICATE_AUTHORIZATION).
 */
export function bearer(fallback?: TokenSource): Interceptor {
  return (next) => async (request) => {
    const token =
      request.contextValues.get(TOKEN) ?? (fallback === undefined ? undefined : tokenOf(fallback));
    if (token !== undefined && !request.header.has(AUTHORIZATION)) {
      request.header.set(AUTHORIZATION, `Bearer ${token}`);
    }
    return next(request);
  };
}

/** The context values of a call with its own token: the token over the caller's values. */
class WithToken implements ContextValues {
  constructor(
    private readonly token: string,
    private readonly base: ContextValues,
  ) {}

  get<T>(key: ContextKey<T>): T {
    return key.id === TOKEN.id ? (this.token as T) : this.base.get(key);
  }

  set<T>(key: ContextKey<T>, value: T): this {
    this.base.set(key, value);
    return this;
  }

  delete(key: ContextKey<unknown>): this {
    this.base.delete(key);
    return this;
  }
}

/** Call options that make one call with `token` (through a transport with the bearer
 * interceptor); `options` are kept, their context values too. */
export function withToken(token: string, options: CallOptions = {}): CallOptions {
  return {
    ...options,
    contextValues: new WithToken(token, options.contextValues ?? createContextValues()),
  };
}

/** `client` acting with `token` on every call: one object per seat, one connection for all. A
 * function is called for each call (TokenSource): `asToken(client, () => mintStudioToken(secret,
 * now() + 600))` never sends an expired studio token, on a stream reopened an hour later too. */
export function asToken(client: GameClient, token: TokenSource): GameClient {
  return new Proxy(client, {
    get(target, name, receiver) {
      const method: unknown = Reflect.get(target, name, receiver);
      if (typeof method !== "function") {
        return method;
      }
      return (request: unknown, options?: CallOptions) =>
        (method as (r: unknown, o: CallOptions) => unknown).call(
          target,
          request,
          withToken(tokenOf(token), options),
        );
    },
  });
}
