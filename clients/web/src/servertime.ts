// The server's clock, as well as the page can tell it, for the turn clocks.
//
// A seat's deadline (SeatToAct.deadline_ms) is a time on the server's clock. Counted down against
// the browser's own (Date.now()), it is off by as much as the two clocks disagree: with the
// browser 40 s slow a 30 s turn showed 1:03 left, with it 40 s fast 0:00 from the start. The
// contract has no "server's now", but what the page receives carries readings of the server's
// clock taken before the page got them: each event's recorded_at_ms (stamped as it was recorded,
// then sent) and each answer's HTTP Date header (whole seconds, rounded down). A reading taken
// before the page received it at local time t says that the server's clock read at least that
// much at t:
//
//     offset (server's clock − local clock) ≥ reading − t
//
// Each reading is a lower bound of the offset, exact but for the time the message took to come
// (the network, the server's queue, the page's own work): delay only ever makes the server look
// behind, never ahead. The estimate is the highest bound among the recent readings, the one
// that took least time to come. An old reading (the events so far that a stream opens with,
// perhaps minutes old) is a loose bound, never a wrong one: the estimate does not take it for
// the present, as "offset = the last event's recorded_at_ms − now" would after a reload mid-turn.
// Every answer's Date header bounds the offset within a second and a round trip, from the page's
// first answer on; a freshly recorded event (the other seats' moves, the answer to the page's
// own) within the network's delay. The error that remains shows more time left, not less.
//
// The local clock is performance.now(), not Date.now(): it runs at a steady pace whatever is
// done to the browser's clock meanwhile (a person setting it, a time sync stepping it), so that a
// bound stays one. Readings older than WINDOW_MS are dropped all the same (but the newest), so
// that the server's clock stepped back is followed too.
//
// The Date header is the server's when it reaches the page as the server sent it: a proxy in
// front of the server that writes its own adds its own clock's error (none of ours does).

/** How long a reading counts, in ms of the local clock. */
export const WINDOW_MS = 5 * 60_000;

interface Reading {
  /** When it was received, on the local clock. */
  readonly at: number;
  /** The lower bound of the offset it gives. */
  readonly bound: number;
}

export class ServerClock {
  /** The readings that may yet be the highest bound: received in order, their bounds falling
   * (a reading with a higher bound than an older one outlasts it, and the older one never counts
   * again). The first one's bound is the estimate. */
  private readings: Reading[] = [];

  constructor(
    private readonly local: () => number = () => performance.now(),
    private readonly wall: () => number = () => Date.now(),
  ) {}

  /** A time the server read off its clock (Unix ms) before the page received it, at `at`. */
  observe(serverMs: bigint | number, at: number = this.local()): void {
    const ms = Number(serverMs);
    if (!Number.isFinite(ms) || ms <= 0) return;
    const bound = ms - at;
    while (this.readings.length && (this.readings.at(-1)?.bound ?? 0) <= bound) this.readings.pop();
    this.readings.push({ at, bound });
    this.forget(at);
  }

  /** The readings older than WINDOW_MS at `now`, but the newest. */
  private forget(now: number): void {
    while (this.readings.length > 1 && (this.readings[0]?.at ?? now) < now - WINDOW_MS)
      this.readings.shift();
  }

  /** An answer's HTTP Date header ("Mon, 07 Dec 2026 00:29:56 GMT"): the second it was sent in.
   * Rounded down, so a reading like any other. */
  observeDate(header: string | null, at: number = this.local()): void {
    const ms = header ? Date.parse(header) : NaN;
    if (!Number.isNaN(ms)) this.observe(ms, at);
  }

  /** The server's time now (Unix ms) as estimated; the browser's own before any reading. */
  now(): number {
    const local = this.local();
    this.forget(local);
    const first = this.readings[0];
    return first ? local + first.bound : this.wall();
  }
}
