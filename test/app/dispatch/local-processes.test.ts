// A local job's processes die with it, always (issue 34.2): the runner starts in a process
// group (and, where the app is root, a PID namespace) of its own, and at every end of the
// job, and at the next start of the app for a job the last one left, the whole group is
// killed and waited for. The job here plants a daemon as an attacker would (`setsid`: a
// session and group of its own, so killing the runner's group alone would miss it). Real
// processes and a real git repository.
import { execa } from "execa";
import { spawn } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { confinedCommand } from "../../../src/app/dispatch/job-processes.js";
import { createLocalDispatcher, type LocalOptions } from "../../../src/app/dispatch/local.js";
import type { JobOutcome } from "../../../src/app/dispatch/types.js";
import type { GitHub } from "../../../src/app/github.js";
import type { JobSpec } from "../../../src/shared/job.js";
import { hostPidsWith } from "../../helpers/host-pids.js";

let dir: string;
const planted: number[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-local-procs-"));
  // The runner runs as a user of its own (60998 by default): it reads the clone and writes
  // its marker files here.
  await chmod(dir, 0o1777);
});

afterEach(async () => {
  // Every daemon a test planted, found by its marker (planter), whatever the test saw.
  planted.push(...(await hostPidsWith(`1000.${process.pid}`)));
  for (const pid of planted) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {
      // Gone, as it should be.
    }
  }
  planted.length = 0;
  await rm(dir, { recursive: true, force: true });
});

/** Alive: a process, not a zombie waiting for its parent. */
async function alive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  return (
    stat !== undefined && stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z"
  );
}

async function repoWithCommit(): Promise<{ repo: string; sha: string }> {
  const repo = join(dir, "repo");
  await execa("git", ["init", "-q", "-b", "main", repo]);
  await writeFile(join(repo, "kernel.cu"), "// kernel\n");
  const git = (...args: string[]) => execa("git", ["-C", repo, ...args]);
  await git("add", ".");
  await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "x");
  return { repo, sha: (await git("rev-parse", "HEAD")).stdout.trim() };
}

/**
 * A runner that plants a daemon in a session of its own (`sleep`, its argument a number no
 * other process has: how the test finds it from outside the job's PID namespace), writes
 * `pidFile` once it is planted, then does `then`.
 */
let plantings = 0;
function planter(pidFile: string, then: string): { command: string[]; marker: string } {
  const marker = `1000.${process.pid}${++plantings}7`;
  const daemon = `echo planted > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep ${marker}`;
  return {
    command: [
      "sh",
      "-c",
      `setsid sh -c '${daemon}' </dev/null >/dev/null 2>&1 & while [ ! -s ${pidFile} ]; do sleep 0.01; done; ${then}`,
      "runner",
    ],
    marker,
  };
}

/** The planted daemon's pid on this machine, once it is planted (and while it lives). */
async function daemonPid(pidFile: string, marker: string): Promise<number | undefined> {
  await vi.waitFor(() => readFile(pidFile, "utf8"), { timeout: 600_000, interval: 20 });
  const [pid] = await vi.waitFor(
    async () => {
      const pids = await hostPidsWith(marker);
      if (pids.length === 0) throw new Error("not yet");
      return pids;
    },
    { timeout: 600_000, interval: 20 },
  );
  if (pid !== undefined) planted.push(pid);
  return pid;
}

function job(sha: string, id: string): JobSpec {
  return { schema: 1, id, kind: "bench", repo: { owner: "octo", name: "kernels" }, sha, tasks: [] };
}

async function runOne(
  options: Partial<LocalOptions> & Pick<LocalOptions, "runnerCommand">,
  id: string,
  during?: (dispatcher: ReturnType<typeof createLocalDispatcher>, pidFile: string) => Promise<void>,
): Promise<{ outcome: JobOutcome | undefined; pidFile: string }> {
  const { repo, sha } = await repoWithCommit();
  let outcome: JobOutcome | undefined;
  const dispatcher = createLocalDispatcher({
    repoDir: repo,
    gpus: 1,
    timeoutMs: 600_000,
    stateDir: join(dir, "state"),
    onDone: (_, ended) => {
      outcome = ended;
      return Promise.resolve();
    },
    onError: () => undefined,
    ...options,
  });
  await dispatcher.start({
    spec: job(sha, id),
    github: { repo: { owner: "octo", repo: "kernels" } } as GitHub,
    workflow: "evokernel.yml",
    ref: "main",
    checkRun: { installationId: 1, id: 900 },
  });
  await during?.(dispatcher, join(dir, "daemon.pid"));
  await dispatcher.idle?.();
  return { outcome, pidFile: join(dir, "daemon.pid") };
}

// Without a PID namespace (the app not root) a process that leaves the group survives: the
// documented limit (docs/SECURITY.md). These tests need the namespace.
const pidNamespace = (await confinedCommand("true", [])).pidNamespace;

describe.skipIf(!pidNamespace)("a local job's processes", () => {
  it("die with a job that succeeds or fails: a setsid daemon it planted is gone when it ends", async () => {
    const pidFile = join(dir, "daemon.pid");
    const plant = planter(pidFile, "exit 0");
    const { outcome } = await runOne({ runnerCommand: plant.command }, "bench-7-aaaaaaa-000001");
    expect(outcome?.kind).toBe("failed");
    // It was planted; ended and waited for, it is gone by the time the outcome is handed on.
    expect(await readFile(pidFile, "utf8")).toContain("planted");
    expect(await hostPidsWith(plant.marker)).toEqual([]);
  });

  it("die with a job that times out", async () => {
    const pidFile = join(dir, "daemon.pid");
    const plant = planter(pidFile, "exec sleep 1000");
    const { outcome } = await runOne(
      { runnerCommand: plant.command, timeoutMs: 3_000 },
      "bench-7-aaaaaaa-000002",
    );
    expect(outcome?.kind === "failed" ? outcome.message : "").toContain("was stopped");
    expect(await readFile(pidFile, "utf8")).toContain("planted");
    expect(await hostPidsWith(plant.marker)).toEqual([]);
  });

  it("die with a job that is cancelled", async () => {
    const plant = planter(join(dir, "daemon.pid"), "exec sleep 1000");
    await runOne(
      { runnerCommand: plant.command },
      "bench-7-aaaaaaa-000003",
      async (dispatcher, pidFile) => {
        const pid = await daemonPid(pidFile, plant.marker);
        expect(pid).toBeDefined();
        await dispatcher.cancel("bench-7-aaaaaaa-000003", undefined, {} as GitHub);
      },
    );
    expect(await hostPidsWith(plant.marker)).toEqual([]);
  });
});

describe("a job that has not finished", () => {
  // At its deadline the app asks the backend where the job stood, for the check run (the
  // acceptance run of 2026-11-29: a review stopped at 7 minutes said only "check that a GPU
  // runner is online", on a machine whose runner was busy verifying).
  it("is said to be running, with its last lines, or waiting for a GPU; its log is kept", async () => {
    const keepDir = join(dir, "kept");
    const ready = join(dir, "printed");
    const runner = [
      "sh",
      "-c",
      `echo 'static kernel.cu ok'; echo 'verify kernel.cu …' >&2; touch ${ready}; exec sleep 1000`,
      "runner",
    ];
    const { repo, sha } = await repoWithCommit();
    const dispatcher = createLocalDispatcher({
      repoDir: repo,
      gpus: 1,
      timeoutMs: 600_000,
      keepDir,
      runnerCommand: runner,
      onDone: () => Promise.resolve(),
      onError: () => undefined,
    });
    const target = (id: string) => ({
      spec: job(sha, id),
      github: { repo: { owner: "octo", repo: "kernels" } } as GitHub,
      workflow: "evokernel.yml",
      ref: "main",
    });
    await dispatcher.start(target("bench-7-aaaaaaa-000011"));
    await dispatcher.start(target("bench-7-aaaaaaa-000012"));
    await vi.waitFor(() => readFile(ready, "utf8"), { timeout: 600_000, interval: 20 });
    await vi.waitFor(
      () => expect(dispatcher.whereIs?.("bench-7-aaaaaaa-000011")).toContain("verify kernel.cu …"),
      { timeout: 600_000, interval: 20 },
    );
    const running = dispatcher.whereIs?.("bench-7-aaaaaaa-000011") ?? "";
    expect(running).toMatch(
      /^the runner on this machine \(GPU 0\) was still working after less than a minute; its last lines:/,
    );
    expect(running).toContain("static kernel.cu ok");
    expect(dispatcher.whereIs?.("bench-7-aaaaaaa-000012")).toBe(
      "it never started: every GPU slot on this machine (1) was busy with other jobs",
    );
    expect(dispatcher.whereIs?.("bench-7-aaaaaaa-000099")).toBeUndefined();
    await dispatcher.cancel("bench-7-aaaaaaa-000012", undefined, {} as GitHub);
    await dispatcher.cancel("bench-7-aaaaaaa-000011", undefined, {} as GitHub);
    await dispatcher.idle?.();
    expect(await readFile(join(keepDir, "bench-7-aaaaaaa-000011.log"), "utf8")).toContain(
      "verify kernel.cu …",
    );
    expect(dispatcher.whereIs?.("bench-7-aaaaaaa-000011")).toBeUndefined();
  });
});

describe("the next start of the app", () => {
  it("kills the group a job's record names, though its leader is gone", async () => {
    const { repo } = await repoWithCommit();
    const stateDir = join(dir, "state");
    await mkdir(stateDir);
    // A group whose leader (the runner) died and left a child behind, in the group.
    const leader = spawn("sh", ["-c", `sleep 1000 & echo $! > ${join(dir, "orphan.pid")}`], {
      detached: true,
      stdio: "ignore",
    });
    await new Promise((done) => leader.once("exit", done));
    const orphan = Number((await readFile(join(dir, "orphan.pid"), "utf8")).trim());
    planted.push(orphan);
    expect(await alive(orphan)).toBe(true);
    const bootId = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    await writeFile(
      join(stateDir, "bench-7-aaaaaaa-000004.json"),
      JSON.stringify({
        jobId: "bench-7-aaaaaaa-000004",
        installationId: 1,
        owner: "octo",
        repo: "kernels",
        checkRunId: 904,
        pid: leader.pid,
        group: { pgid: leader.pid, leaderStart: "gone", bootId },
      }),
    );
    const lost = await createLocalDispatcher({
      repoDir: repo,
      runnerCommand: ["true"],
      gpus: 1,
      timeoutMs: 600_000,
      stateDir,
      onDone: () => Promise.resolve(),
      onError: () => undefined,
    }).recover?.();
    expect(lost?.map((each) => each.checkRunId)).toEqual([904]);
    expect(await alive(orphan)).toBe(false);
  });

  it("leaves a group alone whose leader's pid went to another process, or from before a reboot", async () => {
    const { repo } = await repoWithCommit();
    const stateDir = join(dir, "state");
    await mkdir(stateDir);
    const other = spawn("sleep", ["1000"], { detached: true, stdio: "ignore" });
    const pid = other.pid ?? 0;
    planted.push(pid);
    const bootId = (await readFile("/proc/sys/kernel/random/boot_id", "utf8")).trim();
    const record = (id: string, group: object) =>
      writeFile(
        join(stateDir, `${id}.json`),
        JSON.stringify({
          jobId: id,
          installationId: 1,
          owner: "octo",
          repo: "kernels",
          checkRunId: 905,
          group,
        }),
      );
    await record("bench-7-aaaaaaa-000005", { pgid: pid, leaderStart: "1", bootId });
    await record("bench-7-aaaaaaa-000006", {
      pgid: pid,
      leaderStart: "gone",
      bootId: "another boot",
    });
    await createLocalDispatcher({
      repoDir: repo,
      runnerCommand: ["true"],
      gpus: 1,
      timeoutMs: 600_000,
      stateDir,
      onDone: () => Promise.resolve(),
      onError: () => undefined,
    }).recover?.();
    expect(await alive(pid)).toBe(true);
  });
});

describe.skipIf(!pidNamespace)("a local job's runner", () => {
  /** The runner's output, as the job's failure carries it (the runner exits 1, no result). */
  async function runnerSays(script: string, id: string): Promise<string> {
    const { outcome } = await runOne(
      { runnerCommand: ["sh", "-c", `${script}; exit 1`, "runner"] },
      id,
    );
    return outcome?.kind === "failed" ? outcome.message : "";
  }

  it("sees none of the app's processes: not their environment, not their command lines", async () => {
    const said = await runnerSays(
      `if [ -r /proc/${process.pid}/environ ]; then echo "SEEN app"; else echo "HIDDEN app"; fi; ls /proc | grep -c '^[0-9]' | sed 's/^/processes /'`,
      "bench-7-aaaaaaa-000007",
    );
    expect(said).toContain("HIDDEN app");
    // Its own processes only: the shell, ls, grep, sed (a few), not the machine's.
    const count = Number(/processes (\d+)/.exec(said)?.[1] ?? "NaN");
    expect(count).toBeLessThan(10);
  });

  it("runs as EVOKERNEL_RUNNER_UID where set: the app's files of mode 0600 are closed to it", async () => {
    const dotEnv = join(dir, ".env");
    await writeFile(dotEnv, "PRIVATE_KEY=secret\n", { mode: 0o600 });
    const saved = process.env["EVOKERNEL_RUNNER_UID"];
    process.env["EVOKERNEL_RUNNER_UID"] = "60998";
    try {
      const said = await runnerSays(
        `echo "uid $(id -u)"; if cat ${dotEnv} >/dev/null 2>&1; then echo "READ env"; else echo "DENIED env"; fi; echo "home $HOME"; touch "$HOME/x" && echo "home writable"`,
        "bench-7-aaaaaaa-000008",
      );
      expect(said).toContain("uid 60998");
      expect(said).toContain("DENIED env");
      expect(said).toContain("home writable");
    } finally {
      if (saved === undefined) delete process.env["EVOKERNEL_RUNNER_UID"];
      else process.env["EVOKERNEL_RUNNER_UID"] = saved;
    }
  });
});
