// Processes found from the test's side by a marker in their command line. A local job's
// runner lives in a PID namespace with a /proc of its own (src/app/dispatch/job-processes.ts):
// the pids it sees are not the machine's, and a test must never signal a pid it was told by
// such a process (on the machine that number is someone else's).
import { readdir, readFile } from "node:fs/promises";

/** Live (not zombie) processes whose command line has an argument containing `marker`. */
export async function hostPidsWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const name of await readdir("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, "utf8").catch(() => "");
    if (!cmdline.split("\0").some((arg) => arg.includes(marker))) continue;
    const stat = await readFile(`/proc/${name}/stat`, "utf8").catch(() => "");
    if (stat !== "" && stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z") found.push(Number(name));
  }
  return found;
}
