// The local backend's jobs on disk, so that a restarted app finds what the process before it
// left behind: one small JSON file per job, from its dispatch to its end, holding what the
// app needs to conclude the job's check run and, once the runner runs, its process group.
// At start-up the groups of files left over are killed whole (job-processes.ts: a group whose
// leader the system gave to another process since, or one from before a reboot, is left
// alone; in the job's PID namespace, nothing it started left the group's reach), and their
// folders removed. (Not every process of the job's runner uid: another app or test run on
// the machine given the same uids would lose its jobs; the namespace is the guarantee.) The app
// then concludes those jobs' check runs (jobs/recover.ts), and only then are the files
// deleted. A runner's outcome is written down before it is reported, so a job whose report a
// restart cut short is concluded with what it came to.
import { mkdir, readdir, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { z } from "zod";
import { killGroup } from "./job-processes.js";

export const localRecordSchema = z.object({
  jobId: z.string().regex(/^[a-z]+-[\w]+-[0-9a-f]{7}-[0-9a-f]{6}$/),
  installationId: z.number().int(),
  owner: z.string(),
  repo: z.string(),
  checkRunId: z.number().int(),
  /** The runner, once started. */
  pid: z.number().int().positive().optional(),
  /**
   * The job's process group (dispatch/job-processes.ts): killed as a whole at start-up, not
   * walked from a runner that may be gone.
   */
  group: z
    .object({
      pgid: z.number().int().positive(),
      leaderStart: z.string(),
      bootId: z.string(),
    })
    .optional(),
  /** The uid the job's runner ran as (job-processes.ts: runnerUids), where its own. */
  uid: z.number().int().positive().optional(),
  /** The job's spec file, on the runner's command line. */
  specFile: z.string().optional(),
  /** The job's temporary folder (its worktree inside). */
  dir: z.string().optional(),
  /** The runner ended and this is what it came to, written before it is reported. */
  outcome: z
    .discriminatedUnion("kind", [
      z.object({ kind: z.literal("failed"), message: z.string() }),
      z.object({ kind: z.literal("result") }),
    ])
    .optional(),
});
export type LocalRecord = z.infer<typeof localRecordSchema>;

export interface LocalRecords {
  write(record: LocalRecord): Promise<void>;
  remove(jobId: string): Promise<void>;
  /**
   * Every record an earlier process left: its runner's process group killed, its folder
   * handed to `removeDir`. The file stays until `remove` (its check run
   * concluded), so a start-up that cannot reach GitHub leaves the job to the next.
   */
  reap(removeDir: (dir: string) => Promise<void>): Promise<LocalRecord[]>;
}

export function createLocalRecords(stateDir: string): LocalRecords {
  const fileOf = (jobId: string) => join(stateDir, `${jobId}.json`);
  return {
    async write(record) {
      await mkdir(stateDir, { recursive: true, mode: 0o700 });
      const file = fileOf(localRecordSchema.parse(record).jobId);
      await writeFile(`${file}.tmp`, JSON.stringify(record), { mode: 0o600 });
      // A rename is atomic: a crash never leaves half a record.
      await rename(`${file}.tmp`, file);
    },
    async remove(jobId) {
      await rm(fileOf(jobId), { force: true });
    },
    async reap(removeDir) {
      const names = await readdir(stateDir).catch(() => [] as string[]);
      const found: LocalRecord[] = [];
      for (const name of names) {
        const file = join(stateDir, name);
        if (!name.endsWith(".json")) {
          if (name.endsWith(".json.tmp")) await rm(file, { force: true });
          continue;
        }
        const parsed = localRecordSchema.safeParse(
          JSON.parse(await readFile(file, "utf8").catch(() => "null")),
        );
        if (!parsed.success) {
          await rm(file, { force: true });
          continue;
        }
        const record = parsed.data;
        // By its group (every process the job started, in its PID namespace those that left
        // the group too); a record written before groups were kept, by the runner's tree.
        if (record.group !== undefined) await killGroup(record.group);
        else if (record.pid !== undefined && record.specFile !== undefined)
          await killTree(record.pid, record.specFile);
        if (record.dir !== undefined) await removeDir(record.dir);
        found.push(record);
      }
      return found;
    },
  };
}

/** Kills `pid` and every process under it, if `pid` is still the runner of `specFile`. */
export async function killTree(pid: number, specFile: string): Promise<boolean> {
  const cmdline = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => undefined);
  if (cmdline === undefined || !cmdline.split("\0").includes(specFile)) return false;
  // Children first found, then every one killed: a parent killed first could not be
  // followed to its children (they go to init).
  const tree = [pid, ...(await descendantsOf(pid))];
  for (const each of tree) {
    try {
      process.kill(each, "SIGKILL");
    } catch {
      // Gone already.
    }
  }
  return true;
}

async function descendantsOf(root: number): Promise<number[]> {
  const children = new Map<number, number[]>();
  for (const name of await readdir("/proc").catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => undefined);
    if (stat === undefined) continue;
    // "pid (comm) state ppid …": comm may hold spaces and parentheses.
    const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    if (!Number.isInteger(ppid)) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const found: number[] = [];
  const queue = [root];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) {
    for (const child of children.get(next) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}
