// Generates src/gen/ from the contract with buf and protoc-gen-es (buf.gen.yaml).
//
// buf: $BUF, else the repository's pinned one (.venv/bin/buf, from buf-bin in pyproject.toml).
// google/rpc/error_details.proto (the details of our errors) comes from the googleapis-common-protos
// wheel the service itself pins: $CROUPIER_PYTHON (else the repository's .venv/bin/python) says
// where it is installed, and the file is copied into build/googleapis for buf to read.
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, rmSync } from "node:fs";
import { delimiter, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repository = resolve(here, "../..");
const buf = process.env.BUF || join(repository, ".venv/bin/buf");
const python = process.env.CROUPIER_PYTHON || join(repository, ".venv/bin/python");

function need(path, what) {
  if (!existsSync(path)) {
    console.error(`${what} not found at ${path}: run \`make install\` in ${repository} first`);
    process.exit(1);
  }
}
need(buf, "buf (set BUF, or)");
need(python, "the service's Python (set CROUPIER_PYTHON, or)");

const details = execFileSync(
  python,
  ["-c", "import google.rpc.error_details_pb2 as m, os; print(os.path.dirname(m.__file__))"],
  { encoding: "utf8" },
).trim();
const source = join(details, "error_details.proto");
need(source, "google/rpc/error_details.proto of googleapis-common-protos");
// A fresh build: nothing stale (a removed test, a renamed message) survives in dist/.
rmSync(join(here, "dist"), { recursive: true, force: true });
const target = join(here, "build/googleapis/google/rpc");
rmSync(join(here, "build/googleapis"), { recursive: true, force: true });
mkdirSync(target, { recursive: true });
copyFileSync(source, join(target, "error_details.proto"));

// protoc-gen-es is this package's pinned dev dependency.
const path = [join(here, "node_modules/.bin"), process.env.PATH ?? ""].join(delimiter);
execFileSync(buf, ["generate", "--template", "buf.gen.yaml"], {
  cwd: here,
  stdio: "inherit",
  env: { ...process.env, PATH: path },
});
console.log("generated src/gen from ../../proto and google/rpc/error_details.proto");
