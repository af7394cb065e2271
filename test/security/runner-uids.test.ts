// Issue 34.1, jobs that run at once: each has a uid of its own. Two jobs of one uid could read
// and write each other's folders and signal each other's processes; here two jobs on a 2-GPU
// local dispatcher run side by side, each reads the other's job folder, and neither can (each
// runs as its slot's uid, EVOKERNEL_RUNNER_UID up). Both lock both GPUs' lock files (root's,
// read-only for every uid), each builds in a cache folder of its uid's under the operator's
// (root's: none plants another's). Real processes, a real git repository, the app root (as in
// runner-user.test.ts).
import { execa } from "execa";
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { confinedCommand, runnerUids, sandboxUidOf } from "../../src/app/dispatch/job-processes.js";
import { createLocalDispatcher } from "../../src/app/dispatch/local.js";
import { usersOf } from "../../src/app/dispatch/runner-access.js";
import type { JobOutcome } from "../../src/app/dispatch/types.js";
import type { GitHub } from "../../src/app/github.js";
import type { JobSpec } from "../../src/shared/job.js";
import { gpuLockFiles } from "../../src/process/gpu-locks.js";

let dir: string;
const saved: Record<string, string | undefined> = {};

function setEnv(name: string, value: string | undefined): void {
  if (!(name in saved)) saved[name] = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-runner-uids-"));
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

async function repo(): Promise<{ repo: string; sha: string }> {
  const at = join(dir, "repo");
  await execa("git", ["init", "-q", "-b", "main", at]);
  await writeFile(join(at, "README.md"), "kernels\n");
  const git = (...args: string[]) => execa("git", ["-C", at, ...args]);
  await git("add", ".");
  await git("-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "-m", "x");
  return { repo: at, sha: (await git("rev-parse", "HEAD")).stdout.trim() };
}

function spec(sha: string, n: number): JobSpec {
  return {
    schema: 1,
    id: `bench-7-aaaaaaa-00000${n}`,
    kind: "bench",
    repo: { owner: "octo", name: "kernels" },
    sha,
    tasks: [],
  };
}

const github = { repo: { owner: "octo", repo: "kernels" } } as GitHub;

function said(outcome: JobOutcome | undefined): string {
  return outcome?.kind === "failed" ? outcome.message : JSON.stringify(outcome);
}

describe("the runners' uids", () => {
  it("are one a slot from EVOKERNEL_RUNNER_UID up, passing over the sandbox's uid", () => {
    expect(runnerUids(1, {})).toEqual([60998]);
    expect(runnerUids(3, {})).toEqual([60998, 61000, 61001]);
    expect(runnerUids(2, { EVOKERNEL_RUNNER_UID: "70000" })).toEqual([70000, 70001]);
    expect(
      runnerUids(2, { EVOKERNEL_RUNNER_UID: "70000", EVOKERNEL_SANDBOX_UID: "70001" }),
    ).toEqual([70000, 70002]);
    expect(runnerUids(4, { EVOKERNEL_RUNNER_UID: "off" })).toBe("off");
    // a root runner's sandboxes (EVOKERNEL_RUNNER_UID=off): one uid a slot too
    expect([0, 1].map((slot) => sandboxUidOf(slot, {}))).toEqual([60999, 61000]);
  });

  it("are checked against the machine's users", async () => {
    const passwd = join(dir, "passwd");
    await writeFile(passwd, "root:x:0:0::/root:/bin/sh\nbuilder:x:61000:61000::/home/b:/bin/sh\n");
    expect(await usersOf([60998, 61000], passwd)).toEqual(new Map([[61000, "builder"]]));
  });
});

// A runner of its own uid needs the app to be root with util-linux unshare and setpriv.
const ownUser = (await confinedCommand("true", [])).uid !== undefined;

describe.skipIf(!ownUser)("two local jobs at once", () => {
  it("run as two uids, neither reads the other's folder, and both lock both GPUs", async () => {
    const { repo: clone, sha } = await repo();
    const meet = join(dir, "meet");
    await mkdir(meet);
    await chmod(meet, 0o1777);
    const locks = join(dir, "locks");
    setEnv("EVOKERNEL_RUNNER_UID", "61200");
    setEnv("EVOKERNEL_GPU_LOCKS", locks);
    // As `mktemp -d` makes one: root's, 0700 (the app makes it searchable, not listable).
    const cache = join(dir, "cache");
    await mkdir(cache, { mode: 0o700 });
    setEnv("EVOKERNEL_CACHE", cache);
    // Each says where its folder is, waits for the other's, reads it, locks both GPUs, and
    // stays until the other has read too (so the folder read is there to read).
    const lock =
      "import fcntl, os, sys\nfor gpu in (0, 1):\n  fd = os.open(os.path.join(sys.argv[1], f'gpu-{gpu}.lock'), os.O_RDONLY | os.O_CREAT, 0o644)\n  fcntl.flock(fd, fcntl.LOCK_EX)\n  os.close(fd)\nprint('locked both')";
    const script = [
      'job=$(dirname "$PWD"); me=$(basename "$job")',
      `echo "$job" > ${meet}/$me.tmp && mv ${meet}/$me.tmp ${meet}/$me`,
      `while [ "$(ls ${meet} | grep -c evokernel-job-)" -lt 2 ]; do sleep 0.05; done`,
      `other=$(cat $(ls -d ${meet}/evokernel-job-* | grep -v "/$me$" | grep -v "[.]tmp$"))`,
      'echo "uid $(id -u) gpu $CUDA_VISIBLE_DEVICES"',
      'echo "spec [$(cat "$other/spec.json" 2>&1 | head -c 300)]"',
      'echo "list [$(ls "$other" 2>&1)]"',
      'if touch "$other/planted" 2>/dev/null; then echo PLANTED; fi',
      // the operator's build cache: a folder of this uid's, in a folder none can plant in
      'echo "cache $(basename "$EVOKERNEL_CACHE")"; touch "$EVOKERNEL_CACHE/mine"',
      'if mkdir "$(dirname "$EVOKERNEL_CACHE")/runner-99" 2>/dev/null; then echo PLANTED; fi',
      'echo "caches [$(ls "$(dirname "$EVOKERNEL_CACHE")" 2>&1)]"',
      'for c in "$(dirname "$EVOKERNEL_CACHE")"/runner-61200 "$(dirname "$EVOKERNEL_CACHE")"/runner-61201; do [ "$c" = "$EVOKERNEL_CACHE" ] || echo "other cache [$(ls "$c" 2>&1)]"; done',
      `python3 -c "${lock}" ${locks} 2>&1`,
      `touch ${meet}/done-$me`,
      `while [ "$(ls ${meet} | grep -c done-)" -lt 2 ]; do sleep 0.05; done`,
      "exit 1",
    ].join("\n");
    const outcomes = new Map<string, JobOutcome>();
    const dispatcher = createLocalDispatcher({
      repoDir: clone,
      runnerCommand: ["sh", "-c", script, "runner"],
      gpus: 2,
      timeoutMs: 600_000,
      stateDir: join(dir, "state"),
      onDone: (job, outcome) => {
        outcomes.set(job.id, outcome);
        return Promise.resolve();
      },
      onError: () => undefined,
    });
    for (const n of [1, 2])
      await dispatcher.start({
        spec: spec(sha, n),
        github,
        workflow: "evokernel.yml",
        ref: "main",
        checkRun: { installationId: 1, id: 900 + n },
      });
    await dispatcher.idle?.();
    const texts = [...outcomes.values()].map(said);
    expect(texts).toHaveLength(2);
    const uids = texts.map((text) => /uid (\d+) gpu/.exec(text)?.[1]);
    expect(new Set(uids)).toEqual(new Set(["61200", "61201"]));
    for (const text of texts) {
      expect(text).toMatch(/spec \[cat: .*Permission denied\]/);
      expect(text).not.toContain('"schema"');
      expect(text).toMatch(/list \[ls: .*Permission denied\]/);
      expect(text).not.toContain("PLANTED");
      expect(text).toMatch(/caches \[ls: .*Permission denied\]/);
      expect(text).toMatch(/other cache \[ls: .*Permission denied\]/);
      expect(text).toContain("locked both");
    }
    for (const uid of [61200, 61201]) {
      expect(texts.join("\n")).toContain(`cache runner-${uid}`);
      expect((await stat(join(cache, `runner-${uid}`, "mine"))).uid).toBe(uid);
    }
    expect([(await stat(cache)).uid, (await stat(cache)).mode & 0o7777]).toEqual([0, 0o711]);
    // The locks are root's, every uid's to open read-only, none's to remove.
    const folder = await stat(locks);
    expect([folder.uid, folder.mode & 0o7777]).toEqual([0, 0o755]);
    // each GPU's lock, its gate and its share slots (verifications that share it)
    const names = [...gpuLockFiles("0"), ...gpuLockFiles("1")].sort();
    expect(names).toContain("gpu-1.gate");
    expect((await readdir(locks)).sort()).toEqual(names);
    for (const name of names) {
      const file = await stat(join(locks, name));
      expect([file.uid, file.mode & 0o7777]).toEqual([0, 0o644]);
    }
  }, 600_000);

  it("with the runner as the app's own (root) user, gives each job's sandbox a uid of its own", async () => {
    const { repo: clone, sha } = await repo();
    setEnv("EVOKERNEL_RUNNER_UID", "off");
    setEnv("EVOKERNEL_SANDBOX_UID", undefined);
    setEnv("EVOKERNEL_GPU_LOCKS", join(dir, "locks"));
    const outcomes: JobOutcome[] = [];
    const dispatcher = createLocalDispatcher({
      repoDir: clone,
      runnerCommand: ["sh", "-c", 'echo "sandbox uid $EVOKERNEL_SANDBOX_UID"; exit 1'],
      gpus: 2,
      timeoutMs: 600_000,
      onDone: (_, outcome) => {
        outcomes.push(outcome);
        return Promise.resolve();
      },
      onError: () => undefined,
      onNotice: () => undefined,
    });
    for (const n of [1, 2])
      await dispatcher.start({
        spec: spec(sha, n),
        github,
        workflow: "evokernel.yml",
        ref: "main",
      });
    await dispatcher.idle?.();
    const uids = outcomes.map((outcome) => /sandbox uid (\d+)/.exec(said(outcome))?.[1]);
    expect(uids.sort()).toEqual(["60999", "61000"]);
  }, 600_000);
});
