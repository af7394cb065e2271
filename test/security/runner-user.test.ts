// Issue 34.1: a local job's runner is untrusted too. Where the app is root it runs, by default,
// as a user of its own (60998), in PID, mount, IPC, UTS and network namespaces of its own (an
// LLM job reaches its API host through the job's egress proxy, and nothing else), with the app's key file, job records and kept results covered
// in its mount namespace: code running as the runner reads none of them, even where their
// mode would let any user read them. The runner's folder, home and build cache are its own;
// what it cannot reach (a clone below a folder of mode 0700) fails the job naming the folder.
// Real processes, a real git repository; the last test runs the real bundled CLI as runner.
import { execa } from "execa";
import { once } from "node:events";
import { chmod, cp, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import { type AddressInfo, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, inject, it } from "vitest";
import { confinedCommand } from "../../src/app/dispatch/job-processes.js";
import { createLocalDispatcher, type LocalOptions } from "../../src/app/dispatch/local.js";
import type { JobOutcome } from "../../src/app/dispatch/types.js";
import type { GitHub } from "../../src/app/github.js";
import type { JobSpec } from "../../src/shared/job.js";
import { parseReviewResult } from "../../src/shared/review.js";
import { skipWithoutPython } from "../helpers/python.js";

let dir: string;
const saved: Record<string, string | undefined> = {};

function setEnv(name: string, value: string | undefined): void {
  if (!(name in saved)) saved[name] = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-runner-user-"));
  await chmod(dir, 0o755);
});

afterEach(async () => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
    delete saved[name];
  }
  await rm(dir, { recursive: true, force: true });
});

async function repoIn(parent: string): Promise<{ repo: string; sha: string }> {
  const repo = join(parent, "repo");
  await execa("git", ["init", "-q", "-b", "main", repo]);
  await writeFile(join(repo, "README.md"), "kernels\n");
  const git = (...args: string[]) => execa("git", ["-C", repo, ...args]);
  await git("add", ".");
  await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "x");
  return { repo, sha: (await git("rev-parse", "HEAD")).stdout.trim() };
}

async function runJob(
  runnerCommand: string[],
  spec: Partial<JobSpec> = {},
  options: Partial<LocalOptions> = {},
): Promise<{ outcome: JobOutcome | undefined; notices: string[] }> {
  const { repo, sha } = options.repoDir
    ? { repo: options.repoDir, sha: spec.sha ?? "" }
    : await repoIn(
        await mkdtemp(join(dir, "clone-")).then(async (at) => (await chmod(at, 0o755), at)),
      );
  let outcome: JobOutcome | undefined;
  const notices: string[] = [];
  const dispatcher = createLocalDispatcher({
    repoDir: repo,
    runnerCommand,
    gpus: 1,
    timeoutMs: 600_000,
    stateDir: join(dir, "state"),
    keepDir: join(dir, "kept"),
    onDone: (_, ended) => {
      outcome = ended;
      return Promise.resolve();
    },
    onError: () => undefined,
    onNotice: (message) => notices.push(message),
    ...options,
  });
  const job: JobSpec = {
    schema: 1,
    id: "bench-7-aaaaaaa-000001",
    kind: "bench",
    repo: { owner: "octo", name: "kernels" },
    sha,
    tasks: [],
    ...spec,
  };
  await dispatcher.start({
    spec: job,
    github: { repo: { owner: "octo", repo: "kernels" } } as GitHub,
    workflow: "evokernel.yml",
    ref: "main",
    checkRun: { installationId: 1, id: 900 },
  });
  await dispatcher.idle?.();
  return { outcome, notices };
}

/** What a shell runner printed: the job fails (exit 1, no result) and carries its output. */
function said(outcome: JobOutcome | undefined): string {
  return outcome?.kind === "failed" ? outcome.message : JSON.stringify(outcome);
}

/**
 * A repository whose base and head commits hold the small softmax task (the head's kernel
 * twice as fast to the stand-in harness), and the settings for the real runner on the CPU.
 */
async function forTheRealRunner(): Promise<{ repo: string; base: string; head: string }> {
  const fixture = fileURLToPath(new URL("../fixtures/tasks/small_softmax", import.meta.url));
  const fakeGpu = fileURLToPath(new URL("../helpers/fake-gpu-harness.mjs", import.meta.url));
  const repo = join(dir, "repo");
  await mkdir(join(repo, "kernels"), { recursive: true });
  await cp(fixture, join(repo, "kernels", "small_softmax"), { recursive: true });
  const git = (...args: string[]) => execa("git", ["-C", repo, ...args]);
  const kernel = join(repo, "kernels", "small_softmax", "kernel.cu");
  const commit = async (marker: string) => {
    await writeFile(
      kernel,
      `${(await readFile(kernel, "utf8")).replace(/\n\/\/ speed=.*\n$/, "\n")}\n// ${marker}\n`,
    );
    await git("add", "-A");
    await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", marker);
    return (await git("rev-parse", "HEAD")).stdout.trim();
  };
  await git("init", "-q", "-b", "main");
  const base = await commit("speed=1.0");
  const head = await commit("speed=0.5");
  setEnv("EVOKERNEL_RUNNER_UID", undefined);
  setEnv("EVOKERNEL_PYTHON", fakeGpu);
  setEnv("EVOKERNEL_SANDBOX", "off");
  setEnv("EVOKERNEL_ROOT", fileURLToPath(new URL("../..", import.meta.url)));
  setEnv("EVOKERNEL_CACHE", undefined);
  return { repo, base, head };
}

// A runner of its own uid needs the app to be root with util-linux unshare and setpriv.
const confined = await confinedCommand("true", []);
const ownUser = confined.uid !== undefined;

describe("how a local job's runner is confined", () => {
  it("says why it runs as the app's own user where it must, and refuses a uid it cannot honour", async () => {
    const off = await confinedCommand(
      "true",
      [],
      { hide: [] },
      {
        EVOKERNEL_JOB_PIDNS: "off",
      },
    );
    expect(off).toMatchObject({
      pidNamespace: false,
      network: true,
      unconfined: "EVOKERNEL_JOB_PIDNS=off",
    });
    expect(off.uid).toBeUndefined();
    await expect(
      confinedCommand(
        "true",
        [],
        { hide: [] },
        {
          EVOKERNEL_JOB_PIDNS: "off",
          EVOKERNEL_RUNNER_UID: "60998",
        },
      ),
    ).rejects.toThrow(
      "EVOKERNEL_RUNNER_UID is set but cannot be honoured (EVOKERNEL_JOB_PIDNS=off)",
    );
    await expect(
      confinedCommand("true", [], { hide: [] }, { EVOKERNEL_RUNNER_UID: "root" }),
    ).rejects.toThrow("EVOKERNEL_RUNNER_UID=root is not a uid");
  });

  it("without namespaces keeps the machine's network for the runner, with no proxy, and tells the operator", async () => {
    setEnv("EVOKERNEL_JOB_PIDNS", "off");
    setEnv("EVOKERNEL_RUNNER_UID", undefined);
    const { outcome, notices } = await runJob(
      ["sh", "-c", 'echo "proxy [${EVOKERNEL_LLM_PROXY_SOCKET-}]"; exit 1'],
      { id: "optimize-7-aaaaaaa-000005", kind: "optimize", tasks: ["kernels/softmax"] },
    );
    expect(said(outcome)).toContain("proxy []");
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("because EVOKERNEL_JOB_PIDNS=off");
    expect(notices[0]).toContain(
      "the runner also shares the machine's network: a job reaches any host, an LLM job not only the LLM's API host",
    );
  });

  it.skipIf(!ownUser)(
    "gives every runner a network namespace of its own, and 60998 by default",
    async () => {
      const confined = await confinedCommand("true", [], { hide: [] }, {});
      expect(confined).toMatchObject({ uid: 60998, network: false });
      expect(confined.args).toContain("--net");
    },
  );
});

describe.skipIf(!ownUser)("a local job's runner, by default", () => {
  it("runs as a user of its own and cannot read the app's key file, records or kept results, whatever their mode", async () => {
    const key = join(dir, "app.pem");
    await writeFile(key, "-----BEGIN RSA PRIVATE KEY-----canary\n", { mode: 0o644 });
    await chmod(key, 0o644);
    setEnv("PRIVATE_KEY_PATH", key);
    setEnv("EVOKERNEL_RUNNER_UID", undefined);
    await mkdir(join(dir, "kept"), { mode: 0o755 });
    await writeFile(join(dir, "kept", "other-job.log"), "another job's log\n", { mode: 0o644 });
    const { outcome, notices } = await runJob([
      "sh",
      "-c",
      [
        'echo "uid $(id -u)"',
        `echo "key [$(cat ${key} 2>&1)]"`,
        `echo "kept [$(ls ${join(dir, "kept")} 2>&1)]"`,
        `echo "records [$(ls ${join(dir, "state")} 2>&1)]"`,
        `if umount ${key} 2>/dev/null; then echo "UNCOVERED"; fi`,
        `echo "key again [$(cat ${key} 2>&1)]"`,
        "exit 1",
      ].join("; "),
      "runner",
    ]);
    const text = said(outcome);
    expect(text).toContain("uid 60998");
    expect(text).toMatch(/key \[(cat: .*Permission denied)?\]/);
    expect(text).not.toContain("canary");
    expect(text).toContain("kept []");
    expect(text).toContain("records []");
    expect(text).not.toContain("UNCOVERED");
    expect(text).toMatch(/key again \[(cat: .*Permission denied)?\]/);
    // Its own user: nothing for the operator to hear. (Where a second test run on the machine
    // runs jobs as the same default uid, the app rightly says that some other app uses it:
    // that notice is about the machine, not this job.)
    expect(notices.filter((notice) => !/already run as uid 60998/.test(notice))).toEqual([]);
  });

  it("reaches no network in a job without the LLM; in one with it, the LLM's API host through the job's proxy and nothing else", async () => {
    // The API stand-in (ANTHROPIC_BASE_URL) and another host beside it on the same machine.
    const api = createHttpServer((_request, response) => response.end("the API stand-in\n"));
    let otherReached = 0;
    const other = createServer((socket) => {
      otherReached += 1;
      socket.on("error", () => undefined);
      socket.end("another host\n");
    });
    api.listen(0, "127.0.0.1");
    other.listen(0, "127.0.0.1");
    await Promise.all([once(api, "listening"), once(other, "listening")]);
    const portOf = (server: { address(): unknown }) => (server.address() as AddressInfo).port;
    setEnv("ANTHROPIC_BASE_URL", `http://127.0.0.1:${portOf(api)}`);
    setEnv("ANTHROPIC_API_KEY", "sk-ant-standin-not-a-key");
    // Each line: a direct connection to each host, then a CONNECT to each through the socket
    // the job was given (and, where it answers 200, a request through the tunnel).
    const probe = [
      process.execPath,
      "-e",
      `const net = require("node:net");
const direct = (port) => new Promise((done) => net.connect(port, "127.0.0.1")
  .on("connect", function () { this.destroy(); done("REACHED"); })
  .on("error", (e) => done("UNREACHABLE " + e.code)));
const via = (target) => new Promise((done) => {
  const path = process.env.EVOKERNEL_LLM_PROXY_SOCKET;
  if (!path) return done("NO PROXY");
  let text = "", sent = false;
  const socket = net.connect(path);
  socket.on("connect", () => socket.write("CONNECT " + target + " HTTP/1.1\\r\\nHost: " + target + "\\r\\n\\r\\n"));
  socket.on("data", (chunk) => {
    text += chunk;
    if (!sent && /^HTTP\\/1\\.1 200 [^\\r]*\\r\\n\\r\\n$/.test(text)) {
      sent = true;
      socket.write("GET / HTTP/1.1\\r\\nHost: api\\r\\nConnection: close\\r\\n\\r\\n");
    }
  });
  socket.on("end", () => done(text.replace(/\\r?\\n/g, " | ")));
  socket.on("error", (e) => done("ERROR " + e.code));
});
(async () => {
  console.log("direct api: " + await direct(${portOf(api)}));
  console.log("direct other: " + await direct(${portOf(other)}));
  console.log("proxy api: " + await via("127.0.0.1:${portOf(api)}"));
  console.log("proxy other: " + await via("127.0.0.1:${portOf(other)}"));
  process.exit(1);
})();`,
      "--",
    ];
    try {
      const bench = said((await runJob(probe)).outcome);
      expect(bench).toContain("direct api: UNREACHABLE");
      expect(bench).toContain("direct other: UNREACHABLE");
      expect(bench).toContain("proxy api: NO PROXY");
      const llm = said(
        (
          await runJob(probe, {
            id: "optimize-7-aaaaaaa-000002",
            kind: "optimize",
            tasks: ["kernels/softmax"],
          })
        ).outcome,
      );
      expect(llm).toContain("direct api: UNREACHABLE");
      expect(llm).toContain("direct other: UNREACHABLE");
      expect(llm).toMatch(/proxy api: HTTP\/1\.1 200 Connection established \| .*the API stand-in/);
      expect(llm).toMatch(
        /proxy other: HTTP\/1\.1 403 Forbidden \| .*reaches only the LLM's API host 127\.0\.0\.1:\d+/,
      );
      expect(otherReached).toBe(0);
    } finally {
      api.close();
      other.close();
    }
  });

  it("fails a job whose clone it cannot read, naming the folder and what to change", async () => {
    const closed = join(dir, "closed");
    await mkdir(closed, { mode: 0o700 });
    const { repo, sha } = await repoIn(closed);
    const { outcome } = await runJob(["sh", "-c", "echo ran; exit 1"], { sha }, { repoDir: repo });
    const text = said(outcome);
    expect(text).toContain("cannot read");
    expect(text).toContain(`${closed} is mode 0700`);
    expect(text).toContain(`chmod o+x ${closed}`);
    expect(text).toContain("EVOKERNEL_RUNNER_UID=off");
    expect(text).not.toContain("ran");
  });

  it("runs as the app's own user with EVOKERNEL_RUNNER_UID=off, and the operator is told", async () => {
    setEnv("EVOKERNEL_RUNNER_UID", "off");
    const { outcome, notices } = await runJob(["sh", "-c", 'echo "uid $(id -u)"; exit 1']);
    expect(said(outcome)).toContain(`uid ${process.getuid?.() ?? 0}`);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toContain("EVOKERNEL_RUNNER_UID=off");
    expect(notices[0]).toContain("can read what that user can");
  });

  it("runs the real runner: `evokernel job` gets through git, the plan and the harness to a result", async () => {
    const { repo, base, head } = await forTheRealRunner();
    const { outcome } = await runJob(
      [process.execPath, inject("cliBundle"), "job"],
      {
        id: "review-7-aaaaaaa-000003",
        kind: "review",
        sha: head,
        baseSha: base,
        pr: 7,
        tasks: ["kernels/small_softmax"],
      },
      { repoDir: repo },
    );
    expect(outcome?.kind, said(outcome)).toBe("result");
    const review = outcome?.kind === "result" ? parseReviewResult(outcome.review) : undefined;
    expect(review?.ok).toBe(true);
    if (review?.ok)
      expect(review.result.tasks[0]).toMatchObject({ status: "passed", improvement: true });
  });

  it("runs the real runner's LLM proposer with no network but the job's proxy: its search reaches the API stand-in", async () => {
    const { repo, base, head } = await forTheRealRunner();
    // Anthropic's Messages API, standing in: each request is counted, and refused as invalid
    // (the proposer records that and the search ends; no retry).
    const requests: { path?: string; key?: string }[] = [];
    const api = createHttpServer((request, response) => {
      request.resume();
      request.on("end", () => {
        requests.push({
          ...(request.url === undefined ? {} : { path: request.url }),
          ...(typeof request.headers["x-api-key"] === "string"
            ? { key: request.headers["x-api-key"] }
            : {}),
        });
        response.writeHead(400, { "content-type": "application/json" });
        response.end(
          JSON.stringify({
            type: "error",
            error: { type: "invalid_request_error", message: "the stand-in answers no prompt" },
          }),
        );
      });
    });
    api.listen(0, "127.0.0.1");
    await once(api, "listening");
    setEnv("ANTHROPIC_BASE_URL", `http://127.0.0.1:${(api.address() as AddressInfo).port}`);
    setEnv("ANTHROPIC_API_KEY", "sk-ant-standin-not-a-key");
    try {
      const { outcome } = await runJob(
        [process.execPath, inject("cliBundle"), "job"],
        {
          id: "review-7-aaaaaaa-000004",
          kind: "review",
          sha: head,
          baseSha: base,
          pr: 7,
          tasks: ["kernels/small_softmax"],
          optimize: true,
          proposer: "llm",
          budget: { candidates: 1, minutes: 10, usd: 1 },
        },
        { repoDir: repo },
      );
      expect(outcome?.kind, said(outcome)).toBe("result");
      expect(requests.length, said(outcome)).toBeGreaterThan(0);
      expect(requests[0]).toEqual({
        path: expect.stringMatching(/^\/v1\/messages/) as unknown,
        key: "sk-ant-standin-not-a-key",
      });
    } finally {
      api.close();
    }
  });

  it.skipIf(skipWithoutPython)(
    "starts the harness's sandbox as that user: the real CLI verifies a candidate in it on the CPU",
    async () => {
      const task = fileURLToPath(new URL("../fixtures/tasks/small_softmax", import.meta.url));
      setEnv("EVOKERNEL_RUNNER_UID", undefined);
      setEnv("EVOKERNEL_SANDBOX", undefined);
      setEnv("EVOKERNEL_ROOT", fileURLToPath(new URL("../..", import.meta.url)));
      setEnv("EVOKERNEL_CACHE", undefined);
      setEnv("EVOKERNEL_PYTHON", undefined);
      const { outcome } = await runJob([
        "sh",
        "-c",
        `echo "uid $(id -u)"; "$0" "$1" verify ${task} --candidate ${join(task, "candidate_ok.py")} --device cpu 2>&1; exit 1`,
        process.execPath,
        inject("cliBundle"),
      ]);
      const text = said(outcome);
      expect(text).toContain("uid 60998");
      expect(text).toContain("PASSED (CPU check only, not a verdict)");
    },
    600_000,
  );
});
