// Headless Chromium for the page's tests (Debian's chromium, driven by playwright-core), in a
// fresh profile that close() removes.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const FLAGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  // A plain-HTTP name stays plain HTTP (no attempt at https first).
  "--disable-features=HttpsUpgrades",
  // Two tabs play one game, and only one is in front: without these a background tab's timers
  // and frames are throttled, and each of its moves waited for them (a Koi-Koi game's test took
  // 77 and 113 s in two runs, 69 and 38 s with them, interleaved on a machine shared with other
  // work).
  "--disable-background-timer-throttling",
  "--disable-renderer-backgrounding",
  "--disable-backgrounding-occluded-windows",
];
const VIEWPORT = { width: 1280, height: 900 };
/** A phone: 390 CSS pixels wide (an iPhone 12 to 15's), three device pixels to each, touch. */
export const PHONE = {
  viewport: { width: 390, height: 844 },
  deviceScaleFactor: 3,
  isMobile: true,
  hasTouch: true,
};

/** A browser context, with `flags` beside ours (on a `phone`'s screen: PHONE); `close()` ends it
 * and removes its profile. */
export async function launch(executablePath, flags = [], { phone = false } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "croupier-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    args: [...FLAGS, ...flags],
    ...(phone ? PHONE : { viewport: VIEWPORT }),
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close };
}

/** The service's method a request calls ("SubmitCommand"), or undefined for any other request. */
export function methodOf(request) {
  return /\/croupier\.v1\.GameService\/(\w+)$/.exec(new URL(request.url()).pathname)?.[1];
}
