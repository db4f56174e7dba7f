// A real Croupier server for tests: `croupier serve` on a free local port with a fresh SQLite
// store, as `croupier load --spawn` starts one (service/load.py). Without studio secrets the
// server makes development ones and writes its studio credential beside the store.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, existsSync, openSync, readFileSync } from "node:fs";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { fileURLToPath } from "node:url";

/** Where the repository's `make install` puts the command (this package is clients/typescript). */
export const REPOSITORY_CROUPIER = resolve(
  dirname(fileURLToPath(import.meta.url)),
  "../../../../.venv/bin/croupier",
);

/** How long a server may take to listen: a loaded machine with a cold Python start. */
const START_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
/** How often the log is read for the listening line while the server starts. */
const POLL_MS = 50;
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
  /** What the server logged so far (its last lines). */
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
  // The server logs to a file, never a pipe: a pipe nobody drains (a test blocked in a
  // synchronous call) would fill and stall the server.
  const logPath = join(directory, "serve.log");
  const sink = openSync(logPath, "w");
  let child: ChildProcess;
  try {
    child = spawn(
      command,
      [
        "serve",
        "--address",
        "127.0.0.1:0",
        "--store",
        `sqlite:///${join(directory, "croupier.sqlite3")}`,
        // The readable log: its "listening on" line gives the port (a JSON log says it in
        // its "serving" event instead).
        "--log-format",
        "console",
        // No HTTP listener: the tests call over native gRPC, and a fixed HTTP port would
        // collide with any other server on this machine.
        "--http-address",
        "off",
        ...(options.args ?? []),
      ],
      { env, stdio: ["ignore", "ignore", sink] },
    );
  } finally {
    closeSync(sink);
  }
  let failure: Error | undefined;
  child.once("error", (error) => {
    failure = error;
  });
  const log = (): string => {
    try {
      return readFileSync(logPath, "utf8").slice(-LOG_TAIL);
    } catch {
      return "";
    }
  };
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null && failure === undefined) {
      const gone = exited(child);
      child.kill("SIGTERM");
      const late = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await gone;
      clearTimeout(late);
    }
    await rm(directory, { recursive: true, force: true });
  };
  try {
    const deadline = Date.now() + START_TIMEOUT_MS;
    for (;;) {
      const found = LISTENING.exec(log());
      if (found) {
        const studioToken = (await readFile(join(directory, DEV_CREDENTIAL), "utf8")).trim();
        return { address: `${found[1]}:${found[2]}`, studioToken, log, stop };
      }
      if (failure !== undefined) {
        throw failure;
      }
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(`croupier exited (${child.exitCode}) before it listened:\n${log()}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`croupier did not listen within ${START_TIMEOUT_MS} ms:\n${log()}`);
      }
      await delay(POLL_MS);
    }
  } catch (error) {
    await stop();
    throw error;
  }
}
