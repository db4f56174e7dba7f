// A full lobby (503 LOBBY_FULL with Retry-After): the page says when to try again, counts it down
// beside a Try again button (focused, so that a keyboard player presses it at once), and the
// button asks the lobby again. Prints one JSON line; exits 1 on any failure. Run by
// tests/web/test_web.py against a lobby that takes no game at all.
import { parseArgs } from "node:util";
import { launch } from "./chromium.mjs";

const { values: args } = parseArgs({
  options: {
    url: { type: "string" },
    chromium: { type: "string", default: process.env.CHROMIUM ?? "/usr/bin/chromium" },
  },
});
const STEP_MS = 20_000;

const { context, close } = await launch(args.chromium);
try {
  const page = context.pages()[0] ?? (await context.newPage());
  let asked = 0;
  page.on("request", (request) => {
    if (new URL(request.url()).pathname === "/lobby/games") asked += 1;
  });
  await page.goto(args.url);
  await page.waitForSelector("select[name=preset] option", { state: "attached", timeout: STEP_MS });
  await page.click("button[type=submit]");
  await page.waitForSelector("button.retry", { timeout: STEP_MS });
  const status = (await page.textContent("p.status")) ?? "";
  const countdown = (await page.textContent(".retry-in")) ?? "";
  const focused = await page.evaluate(() => document.activeElement?.textContent ?? "");
  await page.click("button.retry");
  await page.waitForFunction(
    () => document.querySelector("p.status")?.textContent !== "Dealing…",
    undefined,
    {
      timeout: STEP_MS,
    },
  );
  await page.waitForSelector("button.retry", { timeout: STEP_MS });
  console.log(JSON.stringify({ status, countdown, focused, asked }));
} catch (error) {
  console.error(error?.stack ?? String(error));
  process.exitCode = 1;
} finally {
  await close();
}
