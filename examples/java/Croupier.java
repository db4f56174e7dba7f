import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Croupier's GameService over HTTP, in the Connect protocol's JSON form, with the JDK alone
 * (README, "Over HTTP"): every call is {@code POST /croupier.v1.GameService/<Method>}; a unary
 * call sends and receives one JSON object ({@code application/json}); the server-streaming
 * {@code StreamEvents} sends its request in one frame and receives frames
 * ({@code application/connect+json}), each a flags byte, a 4-byte big-endian length and the JSON.
 */
final class Croupier {
  private static final String SERVICE = "/croupier.v1.GameService/";
  /** A frame whose flags have this bit ends the stream: {"error": …} when it failed. */
  private static final int END_STREAM = 0x02;
  /** A compressed frame: never sent here, since this client asks for no compression. */
  private static final int COMPRESSED = 0x01;
  /** The largest frame this client takes (a finished game's events are far smaller). */
  private static final int MAX_FRAME_BYTES = 16 << 20;

  /**
   * The listener closes a connection idle for 5 s (README, limits); the JDK keeps one in its pool
   * for 20 minutes, and a call sent on one the server is closing at that moment fails before any
   * answer ("HTTP/1.1 header parser received no bytes"), which the JDK retries for GET only. A
   * pool that lets connections go after 4 s never sends on one: set before the first client.
   */
  private static final String KEEPALIVE_PROPERTY = "jdk.httpclient.keepalive.timeout";

  private static final String KEEPALIVE_S = "4";

  static {
    if (System.getProperty(KEEPALIVE_PROPERTY) == null) {
      System.setProperty(KEEPALIVE_PROPERTY, KEEPALIVE_S);
    }
  }

  /** Closes the streams that went silent for longer than their heartbeats allow. */
  private static final ScheduledExecutorService WATCHDOG =
      Executors.newSingleThreadScheduledExecutor(
          task -> {
            Thread thread = new Thread(task, "croupier-stream-watchdog");
            thread.setDaemon(true);
            return thread;
          });

  private final HttpClient http;
  private final String base;

  /** A client of the HTTP listener at {@code base} ("http://127.0.0.1:8080"). */
  Croupier(String base) {
    this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
    this.http =
        HttpClient.newBuilder()
            // Plain HTTP/1.1: one stream takes one connection, the JDK pools the others. (The
            // listener also speaks HTTP/2, by TLS's ALPN or prior knowledge; the JDK's plaintext
            // HTTP/2 is an h2c upgrade instead.)
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(10))
            .build();
  }

  /**
   * A unary call: {@code request} as JSON, the answer as a JSON object. {@code token} is the
   * caller's credential (a studio, seat or player token), or null for the calls that need none.
   */
  Map<String, Object> call(String method, String token, Map<String, Object> request)
      throws CroupierException, IOException, InterruptedException {
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(base + SERVICE + method))
            .timeout(Duration.ofSeconds(30))
            .header("content-type", "application/json")
            .header("connect-protocol-version", "1")
            .POST(HttpRequest.BodyPublishers.ofString(Json.write(request), StandardCharsets.UTF_8));
    if (token != null) {
      builder.header("authorization", "Bearer " + token);
    }
    HttpResponse<String> response =
        http.send(builder.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
    Map<String, Object> body = objectOrNull(response.body());
    if (response.statusCode() == 200 && body != null) {
      return body;
    }
    if (body != null && body.containsKey("code")) {
      throw CroupierException.fromBody(body, response.statusCode());
    }
    // Not Connect's answer: a proxy's or the network's. Connect maps its HTTP status to a code.
    throw new CroupierException(
        CroupierException.codeOfHttpStatus(response.statusCode()),
        "HTTP " + response.statusCode() + " without a Connect error body",
        "",
        Map.of(),
        "",
        -1,
        response.statusCode());
  }

  /**
   * A server-streaming call ({@code StreamEvents}): hands each message to {@code onMessage} as it
   * comes, and returns when the server ends the stream with success (the game is over). A
   * stream the server ended with an error throws it. A connection lost without the stream's end,
   * or silent for longer than {@code silenceMs} (0: no limit; twice the request's {@code
   * heartbeatS}: a proxy or a network that stalls without closing), throws an IOException: open
   * the stream again after the last event's version.
   */
  void stream(
      String method,
      String token,
      Map<String, Object> request,
      long silenceMs,
      Consumer<Map<String, Object>> onMessage)
      throws CroupierException, IOException, InterruptedException {
    byte[] json = Json.write(request).getBytes(StandardCharsets.UTF_8);
    ByteBuffer frame = ByteBuffer.allocate(5 + json.length);
    frame.put((byte) 0).putInt(json.length).put(json);
    HttpRequest.Builder builder =
        HttpRequest.newBuilder(URI.create(base + SERVICE + method))
            .header("content-type", "application/connect+json")
            .header("connect-protocol-version", "1")
            .POST(HttpRequest.BodyPublishers.ofByteArray(frame.array()));
    if (token != null) {
      builder.header("authorization", "Bearer " + token);
    }
    HttpResponse<InputStream> response =
        http.send(builder.build(), HttpResponse.BodyHandlers.ofInputStream());
    AtomicLong heard = new AtomicLong(System.nanoTime());
    AtomicBoolean silenced = new AtomicBoolean();
    ScheduledFuture<?> watchdog = null;
    try (DataInputStream in = new DataInputStream(response.body())) {
      if (silenceMs > 0) {
        // The JDK has no read timeout on a response body: closing it ends a blocked read.
        long silenceNs = TimeUnit.MILLISECONDS.toNanos(silenceMs);
        watchdog =
            WATCHDOG.scheduleWithFixedDelay(
                () -> {
                  if (System.nanoTime() - heard.get() > silenceNs && !silenced.getAndSet(true)) {
                    closeQuietly(in);
                  }
                },
                silenceMs / 4,
                silenceMs / 4,
                TimeUnit.MILLISECONDS);
      }
      if (response.statusCode() != 200) {
        // Refused before the stream began (a wrong content type, say): a unary error body.
        String text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        Map<String, Object> body = objectOrNull(text);
        if (body != null && body.containsKey("code")) {
          throw CroupierException.fromBody(body, response.statusCode());
        }
        throw new CroupierException(
            CroupierException.codeOfHttpStatus(response.statusCode()),
            "HTTP " + response.statusCode(),
            "",
            Map.of(),
            "",
            -1,
            response.statusCode());
      }
      while (true) {
        byte[] data;
        int flags;
        try {
          flags = in.readUnsignedByte();
          int length = in.readInt();
          if (length < 0 || length > MAX_FRAME_BYTES) {
            throw new IOException("a frame of " + length + " bytes");
          }
          data = in.readNBytes(length);
          if (data.length != length) {
            throw new EOFException();
          }
        } catch (IOException lost) {
          throw new IOException(
              silenced.get()
                  ? "the stream was silent for " + silenceMs + " ms: resume after the last event"
                  : "the stream was cut before its end: resume after the last event",
              lost);
        }
        heard.set(System.nanoTime());
        if ((flags & COMPRESSED) != 0) {
          throw new IOException("a compressed frame, though none was asked for");
        }
        Map<String, Object> message = objectOrNull(new String(data, StandardCharsets.UTF_8));
        if (message == null) {
          throw new IOException("a frame that is not a JSON object");
        }
        if ((flags & END_STREAM) != 0) {
          // The end of the stream: {} (or with "metadata") on success, {"error": …} on failure.
          Map<String, Object> error = Json.object(message, "error");
          if (!error.isEmpty()) {
            throw CroupierException.fromBody(error, response.statusCode());
          }
          return;
        }
        onMessage.accept(message);
      }
    } finally {
      if (watchdog != null) {
        watchdog.cancel(false);
      }
    }
  }

  private static void closeQuietly(InputStream in) {
    try {
      in.close();
    } catch (IOException ignored) {
      // Closing is all that was wanted.
    }
  }

  @SuppressWarnings("unchecked")
  private static Map<String, Object> objectOrNull(String text) {
    try {
      Object value = Json.parse(text);
      return value instanceof Map ? (Map<String, Object>) value : null;
    } catch (IllegalArgumentException notJson) {
      return null;
    }
  }
}
