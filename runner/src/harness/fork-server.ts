// The client side of `python -m evokernel_harness serve` (docs/DESIGN.md, "The fork
// server"): torch is imported once, and each request runs in a fresh forked child. Requests
// go one at a time, so a request's deadline starts when the server takes it. The CPU fork
// server (`serve --cpu`: static checks and builds, no torch) takes every request at once
// (`concurrent`), each answered as its child ends.
import {
  harnessResponseSchema,
  harnessStartedSchema,
  harnessWaitingSchema,
  type HarnessCommand,
  type HarnessRequest,
  type HarnessResponse,
} from "#shared/contract/harness-request.js";
import { HarnessError, ServerDownError } from "../errors.js";
import { holdView } from "../sandbox/sandbox.js";
import { startHarness, type LineProcess } from "./exec.js";
import type { HarnessOutcome } from "./outcome.js";

export type StartServer = (onLine: (line: string) => void) => Promise<LineProcess>;

export type ForkServerOptions = {
  /** How the server process starts; tests start a stand-in. */
  start?: StartServer;
  /** How long past a request's own timeout the server may take to answer before it counts as hung. */
  graceMs?: number;
  /** Deaths in a row, with no answer between, after which we stop restarting. */
  maxDeaths?: number;
  /** Every request sent at once, not one after another (the CPU fork server). */
  concurrent?: boolean;
};

/** How the CPU fork server starts: static checks and builds, many at once, no torch. */
export const startCpuServer: StartServer = (onLine) => startHarness(["serve", "--cpu"], onLine);

/** How a lane's GPU fork server starts: on that GPU alone, its device 0 (gpu/lanes.ts). */
export function startGpuServer(gpu: string): StartServer {
  return (onLine) => startHarness(["serve"], onLine, { CUDA_VISIBLE_DEVICES: gpu });
}

type Pending = {
  id: string;
  server: LineProcess;
  /** The server said `started`: the request's child may have run (server.py says it before the fork). */
  began: boolean;
  resolve: (outcome: HarnessOutcome) => void;
  /** The server died before the request began: it never ran, so it goes to a new server. */
  resend: () => void;
  /** The server waits for the GPU's lock: no deadline until it starts. */
  waiting: () => void;
  /** The request's deadline starts now (the server holds the GPU and forked the child). */
  started: () => void;
};

export class ForkServer {
  private process: LineProcess | null = null;
  /** A server starting: requests sent meanwhile wait for it rather than start another. */
  private launching: Promise<LineProcess> | null = null;
  private readonly pending = new Map<string, Pending>();
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 1;
  private deathsInARow = 0;
  /** How the last server died, with its output's tail: said where it is not started again. */
  private lastDeath = "";
  private closed = false;
  private readonly start: StartServer;
  private readonly graceMs: number;
  private readonly maxDeaths: number;
  private readonly concurrent: boolean;

  constructor(options: ForkServerOptions = {}) {
    this.start = options.start ?? ((onLine) => startHarness(["serve"], onLine));
    this.graceMs = options.graceMs ?? 30_000;
    this.maxDeaths = options.maxDeaths ?? 3;
    this.concurrent = options.concurrent ?? false;
  }

  /** A HarnessRunner: runs one harness command in a forked child of the server. */
  readonly run = (command: HarnessCommand, timeoutMs: number): Promise<HarnessOutcome> => {
    if (this.concurrent) return this.send(command, timeoutMs);
    const answer = this.queue.then(() => this.send(command, timeoutMs));
    this.queue = answer.catch(() => undefined);
    return answer;
  };

  async close(): Promise<void> {
    this.closed = true;
    const server = this.process;
    this.process = null;
    if (server === null) return;
    server.end();
    const gone = await Promise.race([server.exited.then(() => true), delay(5_000, false)]);
    if (!gone) server.kill();
  }

  private async send(command: HarnessCommand, timeoutMs: number): Promise<HarnessOutcome> {
    if (this.closed) throw new HarnessError("the fork server is closed");
    if (this.deathsInARow >= this.maxDeaths) {
      throw new ServerDownError(
        `the fork server died ${this.deathsInARow} times in a row; not restarting it`,
        { log: this.lastDeath },
      );
    }
    const server = this.process ?? (await (this.launching ??= this.launch()));
    const id = `r${this.nextId++}`;
    return new Promise<HarnessOutcome>((resolve, reject) => {
      const arm = () =>
        setTimeout(() => {
          // The server itself stopped answering: drop it (the next request starts a new one).
          if (this.process === server) this.process = null;
          // A request it never began is sent again when it dies; one it began timed out here.
          if (this.pending.get(id)?.began === true)
            this.settle(id, {
              ...crashed(`the fork server did not answer in time`),
              timedOut: true,
            });
          server.kill();
        }, timeoutMs + this.graceMs);
      let hung = arm();
      const pending: Pending = {
        id,
        server,
        began: false,
        resolve: (outcome) => {
          clearTimeout(hung);
          resolve(outcome);
        },
        resend: () => {
          clearTimeout(hung);
          this.send(command, timeoutMs).then(resolve, reject);
        },
        waiting: () => clearTimeout(hung),
        started: () => {
          pending.began = true;
          clearTimeout(hung);
          hung = arm();
        },
      };
      this.pending.set(id, pending);
      const request: HarnessRequest = { id, request: command, timeoutS: timeoutMs / 1000 };
      server.write(JSON.stringify(request));
    });
  }

  private async launch(): Promise<LineProcess> {
    // its sandbox's view is fixed from its start until it exits
    const release = holdView();
    const server = await this.start((line) => this.receive(line))
      .catch((error: unknown) => {
        release();
        throw error;
      })
      .finally(() => {
        this.launching = null;
      });
    this.process = server;
    void server.exited.then((ended) => {
      release();
      if (this.process === server) this.process = null;
      if (this.closed) return;
      this.deathsInARow += 1;
      const how = ended.signal ?? `exit ${ended.exitCode ?? "?"}`;
      this.lastDeath = `the fork server died (${how})\n${ended.output}`;
      // Only the requests this server had; a newer server's are not its to settle. One it
      // began is its candidate's crash; one it never began goes to a new server, or fails as
      // the server's (ServerDownError) once none is started again, never as the candidate's.
      for (const pending of [...this.pending.values()]) {
        if (pending.server !== server) continue;
        this.pending.delete(pending.id);
        if (pending.began) pending.resolve(crashed(this.lastDeath));
        else pending.resend();
      }
    });
    return server;
  }

  private receive(line: string): void {
    let response: HarnessResponse;
    try {
      const message: unknown = JSON.parse(line);
      const started = harnessStartedSchema.safeParse(message);
      if (started.success) {
        this.pending.get(started.data.id)?.started();
        return;
      }
      const waiting = harnessWaitingSchema.safeParse(message);
      if (waiting.success) {
        this.pending.get(waiting.data.id)?.waiting();
        return;
      }
      response = harnessResponseSchema.parse(message);
    } catch {
      // Not a protocol line (the server's own chatter); the protocol says it should not happen.
      return;
    }
    this.deathsInARow = 0;
    this.settle(response.id, {
      exitCode: response.exit,
      signal: response.signal === null ? null : String(response.signal),
      timedOut: response.timedOut,
      memKilled: response.memKilled,
      seconds: response.seconds,
      log: response.log,
    });
  }

  private settle(id: string, outcome: HarnessOutcome): void {
    const pending = this.pending.get(id);
    if (pending === undefined) return;
    this.pending.delete(id);
    pending.resolve(outcome);
  }
}

function crashed(log: string): HarnessOutcome {
  return { exitCode: null, signal: null, timedOut: false, memKilled: false, seconds: 0, log };
}

function delay<T>(ms: number, value: T): Promise<T> {
  return new Promise((resolve) => setTimeout(resolve, ms, value).unref());
}
