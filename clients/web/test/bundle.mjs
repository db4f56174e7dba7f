// @croupier/client bundles for browsers as shipped: plain esbuild, platform browser, no plugin and
// no stand-in, both through its browser entry (@croupier/client/web) and through a plain
// "@croupier/client" (its exports' `browser` condition). esbuild fails on a Node built-in
// (node:crypto, node:http2…) for browsers; this also fails if connect-node is in the bundle at
// all. Prints one JSON line; exits 1 on any failure. Run by tests/web/test_web.py.
import { dirname } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const here = dirname(fileURLToPath(import.meta.url));
/** What a page of someone else's would write: a client, a command id, a submit. */
const PAGE = `
  import { createClient } from "@connectrpc/connect";
  import { bearer, decodeErrors, GameService, randomId, submit } from "@croupier/client/web";
  import * as plain from "@croupier/client";
  export const ids = [randomId(), plain.randomId()];
  export const parts = [createClient, bearer, decodeErrors, GameService, submit, plain.submit];
`;
const NODE_ONLY = /connect-node|node:/;

const result = await esbuild.build({
  stdin: { contents: PAGE, resolveDir: here, loader: "js", sourcefile: "page.js" },
  bundle: true,
  platform: "browser",
  format: "esm",
  write: false,
  metafile: true,
  logLevel: "silent",
});
const inputs = Object.keys(result.metafile.inputs);
const nodeOnly = inputs.filter((input) => NODE_ONLY.test(input));
if (nodeOnly.length) {
  console.error(`the browser bundle holds Node.js-only code:\n${nodeOnly.join("\n")}`);
  process.exit(1);
}
console.log(
  JSON.stringify({ bytes: result.outputFiles[0].contents.length, inputs: inputs.length }),
);
