// One connection to a Croupier server over native gRPC (HTTP/2), for every seat and the studio.
import { createClient, type Interceptor, type Transport } from "@connectrpc/connect";
import {
  createGrpcTransport,
  Http2SessionManager,
  type GrpcTransportOptions,
} from "@connectrpc/connect-node";
import { asToken, bearer, type GameClient, type TokenSource } from "./auth.js";
import { decodeErrors } from "./errors.js";
import { GameService } from "./gen/croupier/v1/service_pb.js";

/** How long a connection with calls open may go without receiving a byte before the client
 * pings it, and a new call on a connection that quiet first checks it with a ping. connect-node
 * pings never by default: a connection a NAT or a carrier forgot (packets dropped, nothing
 * closed) then carried every stream reopened after it, followGame's and playSeat's watchdogs
 * reopening them on it for as long as the kernel kept it (some 15 minutes). 15 s: the server
 * takes a ping every 10 s at most (too_many_pings); a stream with heartbeats (every 15 s by
 * default) is seldom pinged, and a ping that races a heartbeat is harmless. */
export const PING_INTERVAL_MS = 15_000;
/** A ping unanswered for this long closes the connection (UNAVAILABLE: its calls are retried on
 * a new one). Long enough for a mobile network's round trip with a retransmission or two. */
export const PING_TIMEOUT_MS = 10_000;

export interface ConnectOptions {
  /** "127.0.0.1:50051" (plaintext, as `croupier serve` speaks), or a URL such as
   * "https://croupier.example.com" behind a proxy that terminates TLS. */
  readonly address: string;
  /** A token sent on every call that names none (withToken, asToken); a function is called for
   * each call (TokenSource). */
  readonly token?: TokenSource;
  /** More interceptors, run inside ours (they see the authorization header). */
  readonly interceptors?: readonly Interceptor[];
  /** Anything else connect-node's gRPC transport takes (timeouts, keepalive…). Its pings are
   * PING_INTERVAL_MS and PING_TIMEOUT_MS unless given here (connect-node's own default is none). */
  readonly transport?: Partial<Omit<GrpcTransportOptions, "baseUrl" | "interceptors">>;
}

export interface Croupier {
  readonly transport: Transport;
  /** Calls with the connection's token, if any. */
  readonly client: GameClient;
  /** The client acting with `token` (a seat's, the studio's, a player's) on every call; a
   * function is called for each call (TokenSource: a fresh studio token for each). */
  as(token: TokenSource): GameClient;
  /** Close the connection, and with it every call still open on it: a script's process can then
   * exit at once (a stream still open keeps Node.js running; connect-node lets an idle session
   * go). A call made after it opens a new connection. A `sessionManager` given in
   * `options.transport` is the caller's, shared perhaps with other clients: close() leaves it be
   * (end it with its own abort()). */
  close(): void;
}

/** The URL connect-node wants, from an address or a URL. */
export function baseUrl(address: string): string {
  return address.includes("://") ? address : `http://${address}`;
}

/** A client for the server at `options.address`: errors decoded (CroupierError), tokens sent as
 * `authorization: Bearer <token>`. */
export function connect(options: ConnectOptions): Croupier {
  const url = baseUrl(options.address);
  const given = options.transport ?? {};
  // The connection's manager, made here as connect-node would make it, so that close() can end
  // it (connect-node keeps its own out of reach); one the caller passes is theirs to close: it
  // may carry another client's calls, which our close() must not abort.
  const own =
    given.sessionManager === undefined
      ? new Http2SessionManager(
          url,
          {
            pingIntervalMs: given.pingIntervalMs ?? PING_INTERVAL_MS,
            pingIdleConnection: given.pingIdleConnection,
            pingTimeoutMs: given.pingTimeoutMs ?? PING_TIMEOUT_MS,
            idleConnectionTimeoutMs: given.idleConnectionTimeoutMs,
          },
          given.nodeOptions,
        )
      : undefined;
  const sessionManager = given.sessionManager ?? own;
  const transport = createGrpcTransport({
    ...given,
    sessionManager,
    baseUrl: url,
    // The first is the outermost: errors are decoded whatever the inner ones throw.
    interceptors: [decodeErrors, bearer(options.token), ...(options.interceptors ?? [])],
  });
  const client = createClient(GameService, transport);
  const close = () => own?.abort();
  return { transport, client, as: (token) => asToken(client, token), close };
}
