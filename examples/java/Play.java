import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Plays one whole game of each kind (Hoola, Koi-Koi, Gin Rummy, Rummy with jokers) against a
 * running Croupier over its HTTP listener, in the Connect protocol's JSON form, with the JDK
 * alone: as the studio's backend it creates each game (with a request id, sent twice) and follows
 * it live ({@code StreamEvents}) to credit its final settlement; as each seat it reads its view
 * and plays legal moves, one {@code SubmitCommand} a move; it shows the refusals a client meets
 * (an illegal move, a stale version, a retried command, a bad or expired token, a rate limit)
 * and exports each finished game's replay.
 *
 * <pre>
 *   javac -d out examples/java/*.java
 *   java -cp out Play --http http://127.0.0.1:8080 [--replays DIR]
 * </pre>
 *
 * The studio token that creates the games: $CROUPIER_STUDIO_KEY; else one minted here from
 * $CROUPIER_STUDIO_SECRET (docs/credentials.md, "Formats"); else the development credential a
 * local {@code make run} writes to data/dev-studio-credential ({@code --studio-key-file} to read
 * another).
 */
public final class Play {
  /** What a simple player prefers, by move (the member set in the game's command), best first. */
  private static final Map<String, List<String>> PREFERENCES =
      Map.of(
          "hoola", List.of("nextRound", "declare", "stop", "meld", "layOff", "draw", "discard"),
          "koikoi", List.of("nextRound", "shobu", "chooseCapture"),
          "gin",
          List.of("nextHand", "knock", "layOff", "endLayOffs", "drawStock", "pass", "discard"),
          "rummy", List.of("layDown", "layOff", "swapJoker", "drawStock", "discard"));

  private static final String RANKS = "A23456789TJQK";
  /** How long one game may take, rate limits waited out included. */
  private static final long GAME_TIMEOUT_MS = 300_000;
  /** A heartbeat after this many quiet seconds: twice as long without a message is a dead link. */
  private static final int HEARTBEAT_S = 15;
  /** Commands sent at once to show a rate limit, on a server whose allowance is smaller. */
  private static final int RATE_PROBES = 10;

  /** One game of each kind, short ones: a one-round table, a three-round match, one hand. */
  private static final List<Map<String, Object>> GAMES =
      List.of(
          game("GAME_KIND_HOOLA", "korean", 3, Map.of("hoola", Map.of("rounds", 1))),
          game("GAME_KIND_KOIKOI", "nintendo-3", 2, null),
          game("GAME_KIND_GIN", "single-hand", 2, null),
          game("GAME_KIND_RUMMY", "standard", 3, null));

  private final Croupier croupier;
  private final String studio;
  private final Path replays;

  private Play(Croupier croupier, String studio, Path replays) {
    this.croupier = croupier;
    this.studio = studio;
    this.replays = replays;
  }

  public static void main(String[] args) throws Exception {
    String http = "http://127.0.0.1:8080";
    String keyFile = "data/dev-studio-credential";
    Path replays = null;
    for (int i = 0; i < args.length; i++) {
      switch (args[i]) {
        case "--http" -> http = args[++i];
        case "--studio-key-file" -> keyFile = args[++i];
        case "--replays" -> replays = Path.of(args[++i]);
        default -> throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    Play play = new Play(new Croupier(http), studioToken(keyFile), replays);
    play.refusals();
    for (Map<String, Object> spec : GAMES) {
      play.play(spec);
    }
  }

  // ---- The studio's credential -----------------------------------------------------------

  private static String studioToken(String keyFile) throws IOException, GeneralSecurityException {
    String key = System.getenv("CROUPIER_STUDIO_KEY");
    if (key != null && !key.isBlank()) {
      return key.trim();
    }
    String secret = System.getenv("CROUPIER_STUDIO_SECRET");
    if (secret != null && !secret.isBlank()) {
      return mintStudioToken(parseSecret(secret), System.currentTimeMillis() / 1000 + 600);
    }
    Path file = Path.of(keyFile);
    if (!Files.isReadable(file)) {
      throw new IllegalStateException(
          "no studio credential: set CROUPIER_STUDIO_KEY (a studio token) or"
              + " CROUPIER_STUDIO_SECRET, or run from the repository's root while `make run` serves"
              + " (it writes data/dev-studio-credential), or give --studio-key-file FILE; "
              + file.toAbsolutePath()
              + " cannot be read");
    }
    return Files.readString(file).trim();
  }

  /** A secret as CROUPIER_STUDIO_SECRET holds it: "hex:…" or "base64:…" (either alphabet). */
  static byte[] parseSecret(String secret) {
    String text = secret.trim();
    if (text.startsWith("hex:")) {
      return HexFormat.of().parseHex(text.substring(4));
    }
    if (text.startsWith("base64:")) {
      String b64 = text.substring(7).replace('-', '+').replace('_', '/');
      return Base64.getDecoder().decode(b64);
    }
    throw new IllegalArgumentException("a secret is hex:… or base64:…");
  }

  /**
   * A studio token (docs/credentials.md, "Formats"): {@code studio.v1.<kid>.<expires>.<HMAC>},
   * the HMAC-SHA256 of {@code croupier studio v1:<kid>:<expires>} in lower-case hex, the key id
   * the first 8 hex digits of sha256("croupier key id", 0x00, key).
   */
  static String mintStudioToken(byte[] secret, long expiresAtS) throws GeneralSecurityException {
    MessageDigest sha256 = MessageDigest.getInstance("SHA-256");
    sha256.update("croupier key id".getBytes(StandardCharsets.UTF_8));
    sha256.update((byte) 0);
    String kid = HexFormat.of().formatHex(sha256.digest(secret)).substring(0, 8);
    Mac mac = Mac.getInstance("HmacSHA256");
    mac.init(new SecretKeySpec(secret, "HmacSHA256"));
    String signed = "croupier studio v1:" + kid + ":" + expiresAtS;
    String hmac = HexFormat.of().formatHex(mac.doFinal(signed.getBytes(StandardCharsets.UTF_8)));
    return "studio.v1." + kid + "." + expiresAtS + "." + hmac;
  }

  // ---- Creating a game, as the studio's backend --------------------------------------------

  private static Map<String, Object> game(
      String kind, String preset, int seats, Map<String, Object> overrides) {
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("kind", kind);
    request.put("preset", preset);
    request.put("seats", seats);
    request.put("clientSeeds", List.of("java example " + kind));
    if (overrides != null) {
      request.put("overrides", overrides);
    }
    return request;
  }

  /**
   * CreateGame with a request id, sent again after a lost answer or a refusal that asks to wait:
   * every attempt gets the game the first one made, never a second game. A backend stores the
   * whole request with its id before the first call, so that it can send it again after its own
   * restart too.
   */
  private Map<String, Object> createGame(Map<String, Object> request) throws Exception {
    for (int attempt = 1; ; attempt++) {
      try {
        return croupier.call("CreateGame", studio, request);
      } catch (IOException lost) {
        if (attempt == 5) {
          throw lost;
        }
        Thread.sleep(200L * attempt);
      } catch (CroupierException refused) {
        if (refused.retryAfterMs < 0 || attempt == 5) {
          throw refused;
        }
        Thread.sleep(refused.retryAfterMs);
      }
    }
  }

  // ---- Playing, as each seat ---------------------------------------------------------------

  /**
   * SubmitCommand, sent again with the same command id after a lost connection or a refusal that
   * names a delay (RATE_LIMITED with its RetryInfo, STORE_UNAVAILABLE): the command is applied
   * once however many times it is sent.
   */
  private Map<String, Object> submit(String token, Map<String, Object> request, Seat counted)
      throws Exception {
    for (int attempt = 1; ; attempt++) {
      try {
        return croupier.call("SubmitCommand", token, request);
      } catch (IOException lost) {
        if (attempt == 5) {
          throw lost;
        }
        Thread.sleep(200L * attempt);
      } catch (CroupierException refused) {
        if (refused.retryAfterMs < 0 || attempt == 20) {
          throw refused;
        }
        if (counted != null && refused.reason.equals("RATE_LIMITED")) {
          counted.rateLimited++;
        }
        Thread.sleep(refused.retryAfterMs);
      }
    }
  }

  /** The member a legal move's command sets: "draw", "discard", "knock"… */
  private static String moveOf(Map<String, Object> legal) {
    Map<String, Object> command = Json.object(legal, "command");
    return Json.oneof(Json.object(command, Json.oneof(command)));
  }

  private static Map<String, Object> moveBody(Map<String, Object> legal) {
    Map<String, Object> command = Json.object(legal, "command");
    Map<String, Object> game = Json.object(command, Json.oneof(command));
    return Json.object(game, Json.oneof(game));
  }

  /** A plausible legal move: the preferred kind; the longest label; the highest discard. */
  @SuppressWarnings("unchecked")
  private static Map<String, Object> choose(String game, List<Object> offered) {
    List<Map<String, Object>> moves = new ArrayList<>();
    for (Object move : offered) {
      moves.add((Map<String, Object>) move);
    }
    for (String kind : PREFERENCES.get(game)) {
      Map<String, Object> best = null;
      for (Map<String, Object> move : moves) {
        if (!moveOf(move).equals(kind)) {
          continue;
        }
        if (best == null || better(kind, move, best)) {
          best = move;
        }
      }
      if (best != null) {
        return best;
      }
    }
    for (Map<String, Object> move : moves) {
      if (Json.string(move, "label").toLowerCase().contains("capture")) {
        return move;
      }
    }
    return moves.get(0);
  }

  private static boolean better(String kind, Map<String, Object> move, Map<String, Object> best) {
    if (kind.equals("discard")) {
      return rank(Json.string(moveBody(move), "card")) > rank(Json.string(moveBody(best), "card"));
    }
    // A longer label names more cards ("Meld 7H 8H 9H TH").
    return Json.string(move, "label").length() > Json.string(best, "label").length();
  }

  private static int rank(String card) {
    return card.startsWith("JK") ? -1 : RANKS.indexOf(card.charAt(0));
  }

  /** The seat the game waits on (`turn`), else the first seat that may act. */
  private static int seatToAct(List<Object> toAct) {
    for (Object entry : toAct) {
      @SuppressWarnings("unchecked")
      Map<String, Object> seat = (Map<String, Object>) entry;
      if (Json.bool(seat, "turn")) {
        return Json.integer(seat, "seat"); // seat 0 is left out of the JSON: read it as 0
      }
    }
    @SuppressWarnings("unchecked")
    Map<String, Object> first = (Map<String, Object>) toAct.get(0);
    return Json.integer(first, "seat");
  }

  private void play(Map<String, Object> spec) throws Exception {
    String kind = (String) spec.get("kind");
    String name = kind.substring("GAME_KIND_".length()).toLowerCase();
    Map<String, Object> request = new LinkedHashMap<>(spec);
    request.put("requestId", UUID.randomUUID().toString());
    Map<String, Object> created = createGame(request);
    // The same request again, as after a lost answer: the same game, not a second one.
    Map<String, Object> again = createGame(request);
    String gameId = Json.string(created, "gameId");
    check(gameId.equals(Json.string(again, "gameId")), "a retried CreateGame made another game");
    check(
        Json.string(created, "commitment").equals(Json.string(again, "commitment")),
        "a retried CreateGame has another commitment");
    List<Object> tokens = Json.list(created, "tokens");

    // The studio follows the game live, to credit it once it is over; each seat joins and plays
    // on a thread of its own, as each player's phone would.
    AtomicLong lastEvent = new AtomicLong();
    AtomicLong events = new AtomicLong();
    List<Seat> seats = new ArrayList<>();
    for (Object item : tokens) {
      @SuppressWarnings("unchecked")
      Map<String, Object> token = (Map<String, Object>) item;
      // Seat 0 is left out of the JSON (a default): Json.integer reads it as 0.
      seats.add(new Seat(name, gameId, Json.integer(token, "seat"), Json.string(token, "token")));
    }
    List<Thread> threads = new ArrayList<>();
    AtomicReference<Exception> failed = new AtomicReference<>();
    threads.add(run(failed, () -> follow(gameId, lastEvent, events)));
    for (Seat seat : seats) {
      threads.add(run(failed, seat::play));
    }
    for (Thread thread : threads) {
      thread.join(GAME_TIMEOUT_MS);
      check(!thread.isAlive(), name + ": not over in " + GAME_TIMEOUT_MS / 1000 + " s");
    }
    if (failed.get() != null) {
      throw failed.get();
    }
    long moves = 0;
    long waits = 0;
    for (Seat seat : seats) {
      moves += seat.moves;
      waits += seat.rateLimited;
    }

    Map<String, Object> settlement =
        Json.object(
            croupier.call("GetSettlement", null, Map.of("gameId", gameId, "final", true)),
            "settlement");
    System.out.printf(
        "%s: game %s over after %d moves, one SubmitCommand each (version %d; the studio's stream"
            + " saw %d events)%n",
        name, gameId, moves, lastEvent.get(), events.get());
    if (waits > 0) {
      System.out.printf("  rate limited %d times: waited the RetryInfo delay, sent again%n", waits);
    }
    List<String> winners = new ArrayList<>();
    for (Object winner : Json.list(settlement, "winners")) {
      winners.add(Long.toString(Json.int64(winner)));
    }
    System.out.printf(
        "  outcome %s, winners [%s]%n",
        Json.string(settlement, "outcome"), String.join(", ", winners));
    List<String> net = new ArrayList<>();
    for (Object amount : Json.list(settlement, "net")) {
      net.add(Long.toString(Json.int64(amount))); // int64: strings in JSON
    }
    System.out.println("  net per seat: " + String.join(" ", net));
    for (Object line : Json.list(settlement, "lines")) {
      @SuppressWarnings("unchecked")
      Map<String, Object> payment = (Map<String, Object>) line;
      System.out.println("  " + Json.string(payment, "summary"));
    }
    exportReplay(name, gameId);
  }

  private interface Task {
    void run() throws Exception;
  }

  private static Thread run(AtomicReference<Exception> failed, Task task) {
    Thread thread =
        new Thread(
            () -> {
              try {
                task.run();
              } catch (Exception e) {
                failed.compareAndSet(null, e);
              }
            });
    thread.setDaemon(true);
    thread.start();
    return thread;
  }

  /**
   * One seat's client, as a phone runs it: it joins with its seat token ({@code GetView} says
   * which seat the token is: the token decides, never the request) and holds its {@code
   * StreamEvents} stream with {@code include}, which pushes the other seats' moves and, after
   * each batch, the seat's state (its legal moves, who is to act). Each move is one {@code
   * SubmitCommand}, whose answer carries the same state: a seat that acts again at once (draw,
   * then discard) needs no other call. Nothing is polled.
   */
  private final class Seat {
    final String game;
    final String gameId;
    final int seat;
    final String token;
    /** The newest version this seat acted at: it acts once per version. */
    long actedAt = -1;
    long lastEvent;
    long moves;
    long rateLimited;

    Seat(String game, String gameId, int seat, String token) {
      this.game = game;
      this.gameId = gameId;
      this.seat = seat;
      this.token = token;
    }

    void play() throws Exception {
      Map<String, Object> view = croupier.call("GetView", token, Map.of("gameId", gameId));
      Map<String, Object> mine = Json.object(Json.object(view, "view"), game);
      check(Json.integer(mine, "seat") == seat, "seat " + seat + "'s view is another seat's");
      for (int attempt = 1; ; attempt++) {
        Map<String, Object> request = new LinkedHashMap<>();
        request.put("gameId", gameId);
        request.put("afterVersion", Long.toString(lastEvent)); // uint64: a string (or a number)
        request.put("include", Map.of("legalMoves", true, "toAct", true));
        request.put("batched", true); // each batch and the state after it in one message
        request.put("heartbeatS", HEARTBEAT_S);
        try {
          croupier.stream("StreamEvents", token, request, 2_000L * HEARTBEAT_S, this::onMessage);
          return; // the game is over: the server ended the stream with success
        } catch (IOException lost) {
          if (attempt == 5) {
            throw lost;
          }
          Thread.sleep(200L * attempt); // then resume after the last event received
        }
      }
    }

    private void onMessage(Map<String, Object> message) {
      Map<String, Object> batch = Json.object(message, "batch");
      for (Object item : Json.list(batch, "events")) {
        @SuppressWarnings("unchecked")
        Map<String, Object> event = (Map<String, Object>) item;
        lastEvent = Json.int64(event, "version");
      }
      Map<String, Object> state = Json.object(batch, "state");
      if (state.isEmpty() || Json.bool(state, "finished")) {
        return;
      }
      try {
        long version = Json.int64(state, "version");
        act(version, Json.list(state, "toAct"), Json.list(state, "legalMoves"));
      } catch (RuntimeException e) {
        throw e;
      } catch (Exception e) {
        throw new IllegalStateException(e);
      }
    }

    /** Plays while this seat is the one to act, each move one call. */
    private void act(long version, List<Object> toAct, List<Object> legalMoves) throws Exception {
      while (version > actedAt && !toAct.isEmpty() && seatToAct(toAct) == seat) {
        actedAt = version;
        Map<String, Object> move = choose(game, legalMoves);
        Map<String, Object> command = new LinkedHashMap<>();
        command.put("gameId", gameId);
        command.put("commandId", UUID.randomUUID().toString());
        command.put("expectedVersion", Long.toString(version)); // a uint64: a string in JSON
        command.put("command", move.get("command"));
        command.put("include", Map.of("toAct", true, "legalMoves", true));
        Map<String, Object> answer;
        try {
          answer = submit(token, command, this);
        } catch (CroupierException e) {
          if (e.code.equals("aborted")) {
            return; // another seat moved first (VERSION_CONFLICT): the stream's next state says
          }
          throw e;
        }
        moves++;
        if (Json.bool(answer, "finished")) {
          return;
        }
        // The parts are as of stateVersion: later than the command's version when the service
        // played an away seat's turn right after it.
        version = Json.int64(answer, "stateVersion");
        toAct = Json.list(answer, "toAct");
        legalMoves = Json.list(answer, "legalMoves");
      }
    }
  }

  /**
   * StreamEvents with the studio's token: every event a spectator may see, live, until the game
   * is over (the stream then ends with success). A broken connection is resumed after the last
   * event received.
   */
  private void follow(String gameId, AtomicLong lastEvent, AtomicLong events) throws Exception {
    for (int attempt = 1; ; attempt++) {
      Map<String, Object> request = new LinkedHashMap<>();
      request.put("gameId", gameId);
      request.put("afterVersion", Long.toString(lastEvent.get()));
      request.put("include", Map.of("toAct", true));
      request.put("heartbeatS", HEARTBEAT_S);
      try {
        croupier.stream(
            "StreamEvents",
            studio,
            request,
            2_000L * HEARTBEAT_S,
            message -> {
              Map<String, Object> event = Json.object(message, "event");
              if (!event.isEmpty()) {
                lastEvent.set(Json.int64(event, "version"));
                events.incrementAndGet();
              }
            });
        return;
      } catch (IOException lost) {
        if (attempt == 5) {
          throw lost;
        }
        Thread.sleep(200L * attempt);
      }
    }
  }

  /** The finished game's replay file, in its JSON form (bytes come base64 in JSON). */
  private void exportReplay(String name, String gameId) throws Exception {
    Map<String, Object> asked = Map.of("gameId", gameId, "format", "REPLAY_FORMAT_JSON");
    Map<String, Object> exported = croupier.call("ExportReplay", null, asked);
    byte[] file = Base64.getDecoder().decode(Json.string(exported, "replay"));
    Map<String, Object> verdict =
        croupier.call(
            "VerifyReplay", null, Map.of("replay", Base64.getEncoder().encodeToString(file)));
    check(Json.bool(verdict, "ok"), name + ": its own replay does not verify: " + verdict);
    Object replay = Json.parse(new String(file, StandardCharsets.UTF_8));
    @SuppressWarnings("unchecked")
    List<Object> recorded = Json.list((Map<String, Object>) replay, "events");
    System.out.printf(
        "  replay: %d bytes (JSON), %d events, verified (%s)%n",
        file.length, recorded.size(), Json.string(verdict, "signature"));
    if (replays != null) {
      Files.createDirectories(replays);
      Files.write(replays.resolve(name + ".replay.json"), file);
    }
  }

  // ---- The refusals a client meets ---------------------------------------------------------

  /**
   * One of each refusal docs/errors.md promises, on a Gin hand of its own: each is a
   * CroupierException with Connect's code, the ErrorInfo reason and its metadata.
   */
  private void refusals() throws Exception {
    System.out.println("refusals:");
    Map<String, Object> request = new LinkedHashMap<>(GAMES.get(2));
    request.put("requestId", UUID.randomUUID().toString());
    Map<String, Object> created = createGame(request);
    String gameId = Json.string(created, "gameId");
    List<String> tokens = new ArrayList<>();
    for (Object token : Json.list(created, "tokens")) {
      @SuppressWarnings("unchecked")
      Map<String, Object> seat = (Map<String, Object>) token;
      tokens.add(Json.string(seat, "token")); // in seat order
    }
    Map<String, Object> view = croupier.call("GetView", tokens.get(0), Map.of("gameId", gameId));
    int turn = seatToAct(Json.list(view, "toAct"));
    String mover = tokens.get(turn);
    String waiter = tokens.get(1 - turn);
    long version = Json.int64(view, "version");
    Map<String, Object> pass = Map.of("gin", Map.of("pass", Map.of()));

    Map<String, Object> watch = Map.of("gameId", gameId);
    CroupierException e = refused(() -> croupier.call("GetView", "forged", watch));
    show("a forged token", e, "unauthenticated", "INVALID_TOKEN");

    String secret = System.getenv("CROUPIER_STUDIO_SECRET");
    if (secret != null && !secret.isBlank()) {
      String expired = mintStudioToken(parseSecret(secret), System.currentTimeMillis() / 1000 - 60);
      e = refused(() -> croupier.call("CreateGame", expired, request));
      show("an expired studio token", e, "unauthenticated", "TOKEN_EXPIRED");
      // A stream's refusal comes in its last frame (HTTP 200): {"error": …}.
      e =
          refused(
              () -> {
                croupier.stream("StreamEvents", expired, Map.of("gameId", gameId), 0, m -> {});
                return Map.of();
              });
      show("StreamEvents with an expired studio token", e, "unauthenticated", "TOKEN_EXPIRED");
    }

    e = refused(() -> croupier.call("CreateGame", tokens.get(0), request));
    show("a seat token creating a game", e, "unauthenticated", "STUDIO_CREDENTIAL_REQUIRED");

    Map<String, Object> changed = new LinkedHashMap<>(request);
    changed.put("clientSeeds", List.of("another seed"));
    e = refused(() -> croupier.call("CreateGame", studio, changed));
    show("a request id sent for another game", e, "invalid_argument", "REQUEST_ID_REUSED");

    e = refused(() -> croupier.call("SubmitCommand", waiter, command(gameId, "c1", version, pass)));
    show("a move out of turn", e, "failed_precondition", "NOT_YOUR_TURN");
    check(e.metadata.containsKey("rule"), "a game's refusal names its rule");

    Map<String, Object> stale = command(gameId, "c2", version - 1, pass);
    e = refused(() -> croupier.call("SubmitCommand", mover, stale));
    show("a stale version", e, "aborted", "VERSION_CONFLICT");
    check(
        Long.parseLong(e.metadata.get("current_version")) == version,
        "VERSION_CONFLICT names the version now");

    Map<String, Object> first = submit(mover, command(gameId, "c3", version, pass), null);
    Map<String, Object> retried = submit(mover, command(gameId, "c3", version, pass), null);
    check(Json.bool(retried, "alreadyApplied"), "a retried command is answered already applied");
    check(
        Json.int64(retried, "version") == Json.int64(first, "version"),
        "a retried command has the first answer's version");
    System.out.printf(
        "  the same command id sent again: alreadyApplied, version %d as first answered%n",
        Json.int64(retried, "version"));

    Map<String, Object> draw = Map.of("gin", Map.of("drawStock", Map.of()));
    long now = Json.int64(first, "version");
    e = refused(() -> croupier.call("SubmitCommand", mover, command(gameId, "c3", now, draw)));
    show("a command id used for another command", e, "invalid_argument", "COMMAND_ID_REUSED");

    Map<String, Object> unknownCard = Map.of("gin", Map.of("discard", Map.of("card", "ZZ")));
    Map<String, Object> checked = Map.of("gameId", gameId, "command", unknownCard);
    // ValidateCommand answers a game's refusal as a rejection, not an error.
    Map<String, Object> validated =
        patiently(() -> croupier.call("ValidateCommand", waiter, checked));
    Map<String, Object> rejection = Json.object(validated, "rejection");
    check(!Json.bool(validated, "accepted"), "ValidateCommand accepted an unknown card");
    System.out.printf(
        "  ValidateCommand of an unknown card: %s %s (field %s)%n",
        Json.string(rejection, "status"),
        Json.string(rejection, "reason"),
        Json.string(rejection, "field"));

    // Commands are rate limited per seat (--command-rate, in bursts of --command-burst; a
    // ValidateCommand counts): the refusal says how long to wait. The default allowance is far
    // beyond these few calls: a server started with a small one shows it.
    for (int i = 0; i < RATE_PROBES; i++) {
      try {
        croupier.call("ValidateCommand", waiter, checked);
      } catch (CroupierException limited) {
        show("too many commands", limited, "resource_exhausted", "RATE_LIMITED");
        check(limited.retryAfterMs >= 0, "RATE_LIMITED says how long to wait");
        break;
      }
    }
  }

  private static Map<String, Object> command(
      String gameId, String commandId, long expectedVersion, Map<String, Object> command) {
    Map<String, Object> request = new LinkedHashMap<>();
    request.put("gameId", gameId);
    request.put("commandId", commandId);
    request.put("expectedVersion", Long.toString(expectedVersion));
    request.put("command", command);
    return request;
  }

  private interface Call {
    Map<String, Object> run() throws Exception;
  }

  /** The call, sent again after each RATE_LIMITED once its delay has passed. */
  private static Map<String, Object> patiently(Call call) throws Exception {
    while (true) {
      try {
        return call.run();
      } catch (CroupierException e) {
        if (!e.reason.equals("RATE_LIMITED")) {
          throw e;
        }
        Thread.sleep(e.retryAfterMs);
      }
    }
  }

  /** The refusal of a call that must be refused (a rate limit waited out first). */
  private static CroupierException refused(Call call) throws Exception {
    try {
      Map<String, Object> answer = patiently(call);
      throw new IllegalStateException("answered, not refused: " + answer);
    } catch (CroupierException e) {
      return e;
    }
  }

  private static void show(String what, CroupierException e, String code, String reason) {
    check(
        e.code.equals(code) && e.reason.equals(reason),
        what + ": expected " + code + " " + reason + ", got " + e.getMessage());
    System.out.printf(
        "  %s: %s %s %s%s%n",
        what,
        e.code,
        e.reason,
        e.metadata,
        e.retryAfterMs >= 0 ? " retry in " + e.retryAfterMs + " ms" : "");
  }

  private static void check(boolean ok, String what) {
    if (!ok) {
      throw new IllegalStateException(what);
    }
  }
}
