import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A call Croupier refused, read from Connect's JSON error body (docs/errors.md, "Where the
 * reason is"): {@code {"code": "aborted", "message": "…", "details": [{"type":
 * "google.rpc.ErrorInfo", "value": "<base64>", "debug": {"reason": …, "domain": …, "metadata":
 * {…}}}, …]}}. A client branches on {@link #code} and {@link #reason}, never on the message.
 */
final class CroupierException extends Exception {
  private static final long serialVersionUID = 1L;

  /** Connect's code: the gRPC status in lower case ("failed_precondition", "aborted"…). */
  final String code;
  /** The ErrorInfo reason ("NOT_YOUR_TURN"); "" when the answer is not the service's own. */
  final String reason;
  /** The ErrorInfo metadata: "rule", "current_version", "retry_after_ms"… (all strings). */
  final Map<String, String> metadata;
  /** The field a BadRequest names ("command", "expected_version"); "" without one. */
  final String field;
  /** How long to wait before sending the same request again (RetryInfo); -1 without one. */
  final long retryAfterMs;
  /** The HTTP status; 200 for an error that ended a stream. */
  final int httpStatus;

  CroupierException(
      String code,
      String message,
      String reason,
      Map<String, String> metadata,
      String field,
      long retryAfterMs,
      int httpStatus) {
    super(code + (reason.isEmpty() ? "" : " " + reason) + ": " + message);
    this.code = code;
    this.reason = reason;
    this.metadata = metadata;
    this.field = field;
    this.retryAfterMs = retryAfterMs;
    this.httpStatus = httpStatus;
  }

  /**
   * The error a Connect error body describes. The details' {@code debug} is each detail as JSON
   * (a Connect server may leave it out; Croupier always sends it), so no protobuf is needed.
   */
  static CroupierException fromBody(Map<String, Object> error, int httpStatus) {
    String code = Json.string(error, "code");
    String reason = "";
    String domain = "";
    Map<String, String> metadata = Map.of();
    String field = "";
    long retryAfterMs = -1;
    for (Object item : Json.list(error, "details")) {
      @SuppressWarnings("unchecked")
      Map<String, Object> detail = (Map<String, Object>) item;
      Map<String, Object> debug = Json.object(detail, "debug");
      switch (Json.string(detail, "type")) {
        case "google.rpc.ErrorInfo" -> {
          reason = Json.string(debug, "reason");
          domain = Json.string(debug, "domain");
          Map<String, String> values = new LinkedHashMap<>();
          Json.object(debug, "metadata").forEach((key, value) -> values.put(key, (String) value));
          metadata = values;
        }
        case "google.rpc.BadRequest" -> {
          List<Object> violations = Json.list(debug, "fieldViolations");
          if (!violations.isEmpty()) {
            @SuppressWarnings("unchecked")
            Map<String, Object> first = (Map<String, Object>) violations.get(0);
            field = Json.string(first, "field");
          }
        }
        // A google.protobuf.Duration in JSON: seconds with up to nine decimals and an "s",
        // "0.821s" or "2s".
        case "google.rpc.RetryInfo" -> retryAfterMs = durationMs(Json.string(debug, "retryDelay"));
        default -> {
          // A detail of another kind: none is sent today; a newer server may add some.
        }
      }
    }
    // Only the service's own reasons are to be believed (docs/errors.md): a proxy's error body
    // has no ErrorInfo of domain croupier.v1.
    if (!"croupier.v1".equals(domain)) {
      reason = "";
      metadata = Map.of();
    }
    if (retryAfterMs < 0 && metadata.containsKey("retry_after_ms")) {
      retryAfterMs = Long.parseLong(metadata.get("retry_after_ms"));
    }
    return new CroupierException(
        code.isEmpty() ? "unknown" : code,
        Json.string(error, "message"),
        reason,
        metadata,
        field,
        retryAfterMs,
        httpStatus);
  }

  /** A google.protobuf.Duration's JSON form ("1.5s") in milliseconds. */
  static long durationMs(String duration) {
    if (duration.isEmpty()) {
      return -1;
    }
    double seconds = Double.parseDouble(duration.substring(0, duration.length() - 1));
    return Math.round(seconds * 1000);
  }

  /**
   * Connect's code for an HTTP answer without a Connect error body (a proxy's page, a gateway's
   * 502), as the Connect protocol maps them.
   */
  static String codeOfHttpStatus(int status) {
    return switch (status) {
      case 400 -> "internal";
      case 401 -> "unauthenticated";
      case 403 -> "permission_denied";
      case 404 -> "unimplemented";
      case 429, 502, 503, 504 -> "unavailable";
      default -> "unknown";
    };
  }
}
