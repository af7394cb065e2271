// The fork-server client against a stand-in server (test/helpers/fake-serve.mjs): answers
// matched by id, a dead server's request marked crashed and the server restarted (one it had
// not begun sent again), a hung one killed.
import { fileURLToPath } from "node:url";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { allowRead } from "../../../runner/src/sandbox/sandbox.js";
import { repo } from "../../helpers/cli.js";
import { HarnessError, ServerDownError } from "../../../runner/src/errors.js";
import { childEnv, startLineProcess } from "../../../runner/src/harness/exec.js";
import { ForkServer, type ForkServerOptions } from "../../../runner/src/harness/fork-server.js";
import {
  harnessRequestSchema,
  type HarnessCommand,
} from "../../../src/shared/contract/harness-request.js";

/** A typed request whose task tells the stand-in what to do ("ok a", "die", "queued 400"…). */
function ask(what: string): HarnessCommand {
  return { command: "static-context", task: what };
}

const script = fileURLToPath(new URL("../../helpers/fake-serve.mjs", import.meta.url));
let starts = 0;

function fakeServer(options: Omit<ForkServerOptions, "start"> = {}): ForkServer {
  return new ForkServer({
    ...options,
    start: async (onLine) => {
      starts += 1;
      await Promise.resolve();
      return startLineProcess(process.execPath, [script], { env: childEnv(), onLine });
    },
  });
}

let server: ForkServer | undefined;
afterEach(async () => {
  await server?.close();
  starts = 0;
});

describe("ForkServer", () => {
  it("answers requests in order, in one server, skipping non-protocol lines", async () => {
    server = fakeServer();
    const answers = await Promise.all([
      server.run(ask("ok a"), 1_000),
      server.run(ask("noise b"), 2_000),
      server.run(ask("ok c"), 3_000),
    ]);
    expect(answers.map((answer) => answer.log.split(" in ")[0])).toEqual([
      "ran static-context ok a",
      "ran static-context noise b",
      "ran static-context ok c",
    ]);
    expect(answers.every((answer) => answer.exitCode === 0)).toBe(true);
    expect(answers[2]?.log).toContain("timeout 3");
    expect(starts).toBe(1);
  });

  it("sends each request as one line of the contract: its id, the typed command, its deadline", async () => {
    server = fakeServer();
    const answer = await server.run(
      { command: "static-context", task: "echo", out: "/o/s.json" },
      2_500,
    );
    expect(harnessRequestSchema.parse(JSON.parse(answer.log))).toEqual({
      id: "r1",
      request: { command: "static-context", task: "echo", out: "/o/s.json" },
      timeoutS: 2.5,
    });
  });

  it("marks the request in flight as crashed when the server dies, then restarts it", async () => {
    server = fakeServer();
    const died = await server.run(ask("die"), 1_000);
    expect(died).toMatchObject({ exitCode: null, timedOut: false });
    expect(died.log).toContain("the fork server died (exit 7)");
    const after = await server.run(ask("ok again"), 1_000);
    expect(after.exitCode).toBe(0);
    expect(starts).toBe(2);
  });

  it("kills a server that stops answering, and reports a timeout", async () => {
    server = fakeServer({ graceMs: 100 });
    const hung = await server.run(ask("hang"), 100);
    expect(hung.timedOut).toBe(true);
    expect((await server.run(ask("ok"), 1_000)).exitCode).toBe(0);
    expect(starts).toBe(2);
  });

  it("starts a request's deadline when the server says it started, not while it waits for the GPU", async () => {
    server = fakeServer({ graceMs: 100 });
    // 400 ms in the queue for the machine-wide GPU lock, with a 100 ms deadline and 100 ms grace
    const answer = await server.run(ask("queued 400"), 100);
    expect(answer).toMatchObject({ exitCode: 0, timedOut: false });
    expect(answer.log).toContain("ran static-context queued 400");
    expect(starts).toBe(1);
  });

  it("stops restarting a server that keeps dying", async () => {
    server = fakeServer({ maxDeaths: 2 });
    await server.run(ask("die"), 1_000);
    await server.run(ask("die"), 1_000);
    const down = await server.run(ask("ok"), 1_000).catch((error: unknown) => error);
    // a typed error (the lanes of a search give that GPU up on it), saying how the last one died
    expect(down).toBeInstanceOf(ServerDownError);
    expect(down).toBeInstanceOf(HarnessError);
    expect((down as ServerDownError).log).toContain("the fork server died");
  });

  it("sends a request its server died before beginning to a new server: it never ran, so it is no crash", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evk-flaky-"));
    try {
      server = fakeServer();
      const answer = await server.run(ask(`flaky ${join(dir, "died")}`), 1_000);
      expect(answer.exitCode).toBe(0);
      expect(answer.log).toContain("ran static-context flaky");
      expect(starts).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("fails a request no server ever began as the server's (ServerDownError), never as the candidate's crash", async () => {
    server = fakeServer({ maxDeaths: 3 });
    const down = await server.run(ask("gone"), 1_000).catch((error: unknown) => error);
    expect(down).toBeInstanceOf(ServerDownError);
    expect((down as ServerDownError).log).toContain("the fork server died (exit 9)");
    expect(starts).toBe(3);
    // and the next request is refused at once: the server is not started a fourth time
    await expect(server.run(ask("ok"), 1_000)).rejects.toBeInstanceOf(ServerDownError);
    expect(starts).toBe(3);
  });

  it("when a concurrent server dies, a request it began is a crash and one it had not begun runs again", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evk-flaky-"));
    try {
      server = fakeServer({ concurrent: true });
      const died = join(dir, "died");
      const slow = server.run(ask(`locked ${died}`), 5_000);
      const hung = server.run(ask("hang"), 5_000);
      // answered after the lines before it: "locked" is waiting for the GPU's lock until the
      // server dies (not begun), "hang" began
      expect((await server.run(ask("ok between"), 5_000)).exitCode).toBe(0);
      const flaky = await server.run(ask(`flaky ${died}`), 5_000);
      expect(flaky.exitCode).toBe(0);
      const [slowAnswer, hungAnswer] = await Promise.all([slow, hung]);
      expect(slowAnswer.exitCode).toBe(0);
      expect(hungAnswer).toMatchObject({ exitCode: null, timedOut: false });
      expect(hungAnswer.log).toContain("the fork server died (exit 9)");
      expect(starts).toBe(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("sends every request at once when concurrent (the CPU fork server), each answered as it ends", async () => {
    const finished: string[] = [];
    const run = async (srv: ForkServer, what: string) => {
      const answer = await srv.run(ask(what), 5_000);
      finished.push(what.split(" ")[0] ?? what);
      return answer;
    };
    // one after another: the second request waits for the first's answer
    server = fakeServer();
    await Promise.all([run(server, "queued 300"), run(server, "ok b")]);
    expect(finished).toEqual(["queued", "ok"]);
    await server.close();
    // at once: the quick one is answered while the slow one runs, from one server
    finished.length = 0;
    starts = 0;
    server = fakeServer({ concurrent: true });
    const answers = await Promise.all([run(server, "queued 300"), run(server, "ok b")]);
    expect(finished).toEqual(["ok", "queued"]);
    expect(answers.every((answer) => answer.exitCode === 0)).toBe(true);
    expect(starts).toBe(1);
  });

  it("holds its sandbox's view while it is up: a folder allowed then throws, once it is closed it does not", async () => {
    vi.stubEnv("EVOKERNEL_SANDBOX", "on");
    const late = await mkdtemp(join(tmpdir(), "evk-late-task-"));
    await chmod(late, 0o755); // a task folder the sandbox's user can read (mkdtemp makes 0700)
    try {
      server = fakeServer();
      await server.run(ask("ok a"), 1_000);
      // a task the server cannot see would be "no such task" there (the selftest's external
      // tasks on the H100, 2026-11-26): the caller's order is wrong, and it is told so
      expect(() => allowRead(late)).toThrow(/after its fork server started/);
      // what the server was started with, and what lies under it, may be named again
      expect(() => allowRead(join(repo, "kernels", "softmax"))).not.toThrow();
      await server.close();
      expect(() => allowRead(late)).not.toThrow();
    } finally {
      vi.unstubAllEnvs();
      await rm(late, { recursive: true, force: true });
    }
  });
});
