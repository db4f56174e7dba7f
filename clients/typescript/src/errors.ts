// Our errors, decoded: every status the service sends carries a google.rpc.ErrorInfo (a stable
// reason, domain "croupier.v1", metadata such as the rule cited or the current version);
// malformed input adds a BadRequest naming the field, a rate-limited command a RetryInfo
// (service/status.py is the one table on the server's side).
import { Code, ConnectError, type Interceptor } from "@connectrpc/connect";
import {
  BadRequestSchema,
  ErrorInfoSchema,
  RetryInfoSchema,
} from "./gen/google/rpc/error_details_pb.js";

/** The ErrorInfo domain of every error Croupier itself raises. */
export const DOMAIN = "croupier.v1";

/** One field at fault in a malformed request (a google.rpc.BadRequest entry). */
export interface FieldViolation {
  readonly field: string;
  readonly description: string;
}

const MS_PER_SECOND = 1000;
const NS_PER_MS = 1_000_000;

/**
 * A failed call with our error details decoded. It is a ConnectError too (code, rawMessage,
 * metadata, cause…): code that handles ConnectError keeps working.
 */
export class CroupierError extends ConnectError {
  /** ErrorInfo's stable reason (NOT_YOUR_TURN, GAME_NOT_FOUND, VERSION_CONFLICT…); "" when the
   * status carried no ErrorInfo (a proxy's error, a connection that failed). */
  readonly reason: string;
  /** ErrorInfo's domain: "croupier.v1" for the service's own errors. */
  readonly domain: string;
  /** ErrorInfo's metadata: the rule cited, current_version, game_id, retry_after_ms… */
  readonly info: Readonly<Record<string, string>>;
  /** BadRequest's field violations (malformed input). */
  readonly fieldViolations: readonly FieldViolation[];
  /** RetryInfo's delay, when the server said when to come back (RATE_LIMITED). */
  readonly retryDelayMs: number | undefined;

  constructor(error: ConnectError) {
    super(error.rawMessage, error.code, error.metadata, undefined, error.cause);
    // ConnectError recognises its own by this name (its instanceof check): keep it.
    this.name = "ConnectError";
    this.details = error.details;
    const [info] = error.findDetails(ErrorInfoSchema);
    this.reason = info?.reason ?? "";
    this.domain = info?.domain ?? "";
    this.info = { ...(info?.metadata ?? {}) };
    this.fieldViolations = error
      .findDetails(BadRequestSchema)
      .flatMap((bad) => bad.fieldViolations)
      .map((v) => ({ field: v.field, description: v.description }));
    const [retry] = error.findDetails(RetryInfoSchema);
    const delay = retry?.retryDelay;
    this.retryDelayMs =
      delay === undefined
        ? undefined
        : Number(delay.seconds) * MS_PER_SECOND + Math.floor(delay.nanos / NS_PER_MS);
  }

  /** The first field at fault, "" when none. */
  get field(): string {
    return this.fieldViolations[0]?.field ?? "";
  }

  /** The game's version when a command met a newer one (ABORTED VERSION_CONFLICT). */
  get currentVersion(): bigint | undefined {
    const text = this.info["current_version"];
    return text === undefined ? undefined : BigInt(text);
  }

  // ConnectError's instanceof accepts any error that looks like one; ours must be ours.
  static override [Symbol.hasInstance](value: unknown): boolean {
    return (
      typeof value === "object" && value !== null && CroupierError.prototype.isPrototypeOf(value)
    );
  }
}

/** Any thrown value as a CroupierError (a ConnectError's details decoded; anything else is
 * Code.Unknown with the value as its cause, as ConnectError.from does). */
export function decodeError(error: unknown): CroupierError {
  if (error instanceof CroupierError) {
    return error;
  }
  return new CroupierError(ConnectError.from(error));
}

/** True when `error` is a Croupier error with this code and, if given, this reason. */
export function isCroupierError(
  error: unknown,
  code?: Code,
  reason?: string,
): error is CroupierError {
  return (
    error instanceof CroupierError &&
    (code === undefined || error.code === code) &&
    (reason === undefined || error.reason === reason)
  );
}

/**
 * An interceptor that turns every failed call into a CroupierError: unary calls, and streams
 * both when they open and while their messages are read.
 */
export const decodeErrors: Interceptor = (next) => async (request) => {
  let response;
  try {
    response = await next(request);
  } catch (error) {
    throw decodeError(error);
  }
  if (!response.stream) {
    return response;
  }
  const messages = response.message;
  return {
    ...response,
    message: (async function* () {
      try {
        yield* messages;
      } catch (error) {
        throw decodeError(error);
      }
    })(),
  };
};
