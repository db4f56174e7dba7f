// The repository's golden files (tests/golden), which the server's engine and the standalone
// verifier are held to as well: read by the client's tests that check against the same vectors.
// (A module of test/ without tests of its own: `node --test` loads it and finds none.)
import { readFileSync } from "node:fs";

/** The repository's tests/golden/`name`, parsed: from dist/test/ when compiled, four folders up. */
export function readGolden<T>(name: string): T {
  const file = new URL(`../../../../tests/golden/${name}`, import.meta.url);
  return JSON.parse(readFileSync(file, "utf8")) as T;
}
