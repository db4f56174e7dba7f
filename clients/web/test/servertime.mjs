// The server's clock as the page estimates it (src/servertime.ts), without a browser: readings of
// the server's clock (events' recorded_at_ms, answers' Date headers), each received some time
// after it was taken, on a local clock that has nothing to do with the server's. The estimate is
// the reading that took least time to come: an old one (the events a stream opens with) is never
// taken for the present, the Date header bounds it within a second, a fresh event within its
// delay, and the browser's own clock (Date.now()) does not count once there is a reading. Prints
// one JSON line; exits 1 on any failure. Run by tests/web/test_web.py.
import assert from "node:assert/strict";
import { loadSource } from "./load.mjs";

const { ServerClock, WINDOW_MS } = await loadSource("../src/servertime.ts");

/** The server's clock is this far ahead of the local one (performance.now(): since the page
 * opened), and the browser's wall clock 40 s behind the server's. */
const AHEAD = 1_796_582_800_123;
const SLOW_WALL_MS = 40_000;
let local = 5_000;
const server = () => local + AHEAD;
const clock = new ServerClock(
  () => local,
  () => server() - SLOW_WALL_MS,
);
const error = () => clock.now() - server();
const httpDate = (ms) => new Date(ms).toUTCString();
const report = {};

// No reading yet: the browser's own clock, the best there is.
assert.equal(error(), -SLOW_WALL_MS);
// A stream opens on a game whose last events are a minute old: they say the server is at least
// that far, no more (taking the last one for the present would be a minute behind).
clock.observe(BigInt(server() - 61_000));
clock.observe(BigInt(server() - 60_000));
report.staleEvents = error();
assert.equal(report.staleEvents, -60_000);
// The stream's Date header, 80 ms in coming: within a second (rounded down to it).
clock.observeDate(httpDate(server() - 80));
report.dateHeader = error();
assert.ok(report.dateHeader <= 0 && report.dateHeader > -1080, report.dateHeader);
// The other seat's move, recorded 25 ms before the page got it: within those 25 ms.
local += 3000;
clock.observe(BigInt(server() - 25));
report.freshEvent = error();
assert.equal(report.freshEvent, -25);
// A reading that took longer (a slow answer, the page busy, an old event again) changes nothing:
// delay only ever makes the server look behind.
local += 1000;
clock.observe(BigInt(server() - 900));
clock.observeDate(httpDate(server() - 2000));
clock.observe(BigInt(server() - 120_000));
assert.equal(error(), -25);
// Nothing unreadable counts.
clock.observeDate(null);
clock.observeDate("not a date");
clock.observe(0n);
assert.equal(error(), -25);
// Time passes on the local clock and the estimate keeps up, whatever the wall clock does.
local += 20_000;
assert.equal(error(), -25);

// The server's clock stepped back 10 s (a time sync): the readings taken before it count until
// WINDOW_MS has passed, then the newer ones; the newest always counts.
const stepped = new ServerClock(() => local);
stepped.observe(BigInt(server() - 10));
local += 1000;
const steppedBack = () => server() - 10_000;
stepped.observe(BigInt(steppedBack() - 10));
assert.equal(stepped.now() - steppedBack(), 10_000 - 10);
local += WINDOW_MS;
assert.equal(stepped.now() - steppedBack(), -10);
local += WINDOW_MS;
assert.equal(stepped.now() - steppedBack(), -10);
report.windowMs = WINDOW_MS;

console.log(JSON.stringify(report));
