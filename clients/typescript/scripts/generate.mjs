// Generates src/gen/ from the contract with buf and protoc-gen-es (buf.gen.yaml), with this
// package's own pinned tools only: no Python, no `make install`.
//
// buf: $BUF, else this package's pinned @bufbuild/buf (the version the service pins as buf-bin in
// pyproject.toml). google/rpc/error_details.proto (the details of our errors: ErrorInfo,
// BadRequest, RetryInfo) comes from the pinned google-proto-files package and is copied into
// build/googleapis, so that buf reads that one file rather than the whole of googleapis.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const bin = join(here, "node_modules/.bin");
const buf = process.env.BUF || join(bin, "buf");

function need(path, what) {
  if (!existsSync(path)) {
    console.error(`${what} not found at ${path}: run \`npm ci\` in ${here} first`);
    process.exit(1);
  }
}
need(buf, "buf (set BUF, or)");
const protos = dirname(createRequire(import.meta.url).resolve("google-proto-files/package.json"));
const source = join(protos, "google/rpc/error_details.proto");
need(source, "google/rpc/error_details.proto of google-proto-files");
// A fresh build: nothing stale (a removed test, a renamed message) survives in dist/.
rmSync(join(here, "dist"), { recursive: true, force: true });
const target = join(here, "build/googleapis/google/rpc");
rmSync(join(here, "build/googleapis"), { recursive: true, force: true });
mkdirSync(target, { recursive: true });
copyFileSync(source, join(target, "error_details.proto"));

// protoc-gen-es is this package's pinned dev dependency.
const path = [bin, process.env.PATH ?? ""].join(delimiter);
execFileSync(buf, ["generate", "--template", "buf.gen.yaml"], {
  cwd: here,
  stdio: "inherit",
  env: { ...process.env, PATH: path },
});
console.log("generated src/gen from ../../proto and google/rpc/error_details.proto");
