// Bundles the web client into dist/ (not committed) with esbuild: src/main.ts and its imports,
// @croupier/client (../typescript, built by `npm run build` there) included, for browsers.
//
// @croupier/client is written for Node.js too: its native-gRPC transport (connect-node) is never
// used here and is replaced by a stub, and the two Node built-ins it reads (a random UUID, a
// timer) by their browser equivalents. Every copy of @bufbuild/protobuf and @connectrpc/connect
// resolves to this package's own (one copy in the bundle, whichever folder imports it).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist");
const watch = process.argv.includes("--watch");

const SHIMS = {
  "@connectrpc/connect-node":
    "export function createGrpcTransport() { throw new Error('native gRPC is not for browsers'); }",
  "node:crypto": "export const randomUUID = () => globalThis.crypto.randomUUID();",
  "node:timers/promises": `export function setTimeout(ms, value, options) {
    return new Promise((resolve, reject) => {
      const timer = globalThis.setTimeout(() => resolve(value), ms);
      options?.signal?.addEventListener("abort", () => {
        globalThis.clearTimeout(timer);
        reject(options.signal.reason);
      });
    });
  }`,
};

const browser = {
  name: "croupier-browser",
  setup(build) {
    const shim = new RegExp(
      `^(${Object.keys(SHIMS)
        .map((k) => k.replace(/[/.]/g, "\\$&"))
        .join("|")})$`,
    );
    build.onResolve({ filter: shim }, (args) => ({ path: args.path, namespace: "shim" }));
    build.onLoad({ filter: /.*/, namespace: "shim" }, (args) => ({
      contents: SHIMS[args.path],
      loader: "js",
    }));
    // One copy of the runtime libraries, this package's.
    build.onResolve({ filter: /^@(bufbuild\/protobuf|connectrpc\/connect)(\/.*)?$/ }, (args) => {
      if (args.pluginData === "deduped") return undefined;
      return build.resolve(args.path, { kind: args.kind, resolveDir: here, pluginData: "deduped" });
    });
  },
};

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
for (const file of ["index.html", "style.css"])
  copyFileSync(join(here, "src", file), join(out, file));
const options = {
  entryPoints: [join(here, "src/main.ts")],
  bundle: true,
  format: "esm",
  platform: "browser",
  target: ["es2022"],
  minify: !watch,
  sourcemap: true,
  outfile: join(out, "main.js"),
  plugins: [browser],
  logLevel: "info",
};
if (watch) {
  await (await esbuild.context(options)).watch();
} else {
  await esbuild.build(options);
}
