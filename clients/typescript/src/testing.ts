// A real Croupier server for tests: `croupier serve` on a free local port with a fresh SQLite
// store, as `croupier load --spawn` starts one (service/load.py). Without studio secrets the
// server makes development ones and writes its studio credential beside the store.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Where the repository's `make install` puts the command (this package is clients/typescript). */
export const REPOSITORY_CROUPIER = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../.venv/bin/croupier",
);

/** How long a server may take to listen: a loaded machine with a cold Python start. */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
/** The server's last lines kept to explain a failed start. */
const LOG_TAIL = 4000;
const LISTENING = /listening on (\S+):(\d+)/;
/** The file `croupier serve` writes the development studio credential to (service/config.py). */
const DEV_CREDENTIAL = "dev-studio-credential";

export interface Server {
  /** host:port */
  readonly address: string;
  /** The development studio credential: the token CreateGame takes. */
  readonly studioToken: string;
  /** What the server wrote to stderr so far (its last lines). */
  log(): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** The croupier command: $CROUPIER_BIN, else the repository's .venv/bin/croupier. */
  readonly command?: string;
  /** More arguments for `croupier serve`. */
  readonly args?: readonly string[];
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((done) => {
    if (child.exitCode !== null || child.signalCode !== null) {
      done();
    } else {
      child.once("exit", () => done());
    }
  });
}

/** Start `croupier serve` on 127.0.0.1, port 0 (a free one); resolves once it listens. */
export async function startCroupier(options: StartOptions = {}): Promise<Server> {
  const command = options.command ?? process.env.CROUPIER_BIN ?? REPOSITORY_CROUPIER;
  if (!existsSync(command)) {
    throw new Error(`${command} not found: run \`make install\` (or set CROUPIER_BIN)`);
  }
  const directory = await mkdtemp(join(tmpdir(), "croupier-ts-"));
  const env = { ...process.env };
  // Development secrets, so that the studio credential is written where we read it.
  delete env.CROUPIER_SECRET;
  delete env.CROUPIER_STUDIO_SECRET;
  const child = spawn(
    command,
    [
      "serve",
      "--address",
      "127.0.0.1:0",
      "--store",
      `sqlite:///${join(directory, "croupier.sqlite3")}`,
      "--log-format",
      "json",
      ...(options.args ?? []),
    ],
    { env, stdio: ["ignore", "ignore", "pipe"] },
  );
  let log = "";
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = exited(child);
      child.kill("SIGTERM");
      const late = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await gone;
      clearTimeout(late);
    }
    await rm(directory, { recursive: true, force: true });
  };
  try {
    const address = await new Promise<string>((listening, failed) => {
      const timer = setTimeout(
        () => failed(new Error(`croupier did not listen within ${START_TIMEOUT_MS} ms:\n${log}`)),
        START_TIMEOUT_MS,
      );
      // Read stderr for as long as the server runs: a full pipe would stall its logging.
      child.stderr?.setEncoding("utf8");
      child.stderr?.on("data", (chunk: string) => {
        log = (log + chunk).slice(-LOG_TAIL);
        const found = LISTENING.exec(log);
        if (found) {
          clearTimeout(timer);
          listening(`${found[1]}:${found[2]}`);
        }
      });
      child.once("error", (error) => {
        clearTimeout(timer);
        failed(error);
      });
      child.once("exit", (code) => {
        clearTimeout(timer);
        failed(new Error(`croupier exited (${code}) before it listened:\n${log}`));
      });
    });
    const studioToken = (await readFile(join(directory, DEV_CREDENTIAL), "utf8")).trim();
    return { address, studioToken, log: () => log, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
