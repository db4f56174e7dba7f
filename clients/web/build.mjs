// Bundles the web client into dist/ (not committed) with esbuild: src/main.ts and its imports,
// @croupier/client (../typescript, built by `npm run build` there) included, for browsers.
//
// The page imports @croupier/client/web, the package's browser entry (no native-gRPC transport, no
// Node built-in): it bundles for browsers as it is. The one thing done here is for this repository's
// layout: @croupier/client is linked from ../typescript, which has its own node_modules, so every
// copy of @bufbuild/protobuf and @connectrpc/connect is resolved to this package's own (one copy in
// the bundle, whichever folder imports it; an installed package would share them anyway).
import * as esbuild from "esbuild";
import { copyFileSync, mkdirSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = join(here, "dist");
const watch = process.argv.includes("--watch");

/** The runtime libraries that must be one copy: their classes are checked with instanceof. */
const SHARED = /^@(bufbuild\/protobuf|connectrpc\/connect)(\/.*)?$/;

const oneCopy = {
  name: "croupier-one-copy",
  setup(build) {
    build.onResolve({ filter: SHARED }, (args) => {
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
  plugins: [oneCopy],
  logLevel: "info",
};
if (watch) {
  await (await esbuild.context(options)).watch();
} else {
  await esbuild.build(options);
}
