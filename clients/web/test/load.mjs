// A module of the page's source (src/*.ts) for a test without a browser: bundled by esbuild for
// Node.js in memory and imported from that bundle.
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));

/** The module at `source` (relative to the test folder, e.g. "../src/events.ts"). */
export async function loadSource(source) {
  const built = await esbuild.build({
    entryPoints: [join(here, source)],
    bundle: true,
    platform: "node",
    format: "esm",
    write: false,
    logLevel: "silent",
  });
  const code = Buffer.from(built.outputFiles[0].contents).toString("base64");
  return import(`data:text/javascript;base64,${code}`);
}
