// A detached process's heartbeat, for the tests that check a job's processes die with it: the
// stray writes "PID TIME" to a file every 0.1 s. The checks wait as long as a busy machine
// needs, never a time tuned to a quiet one: a protection has up to `withinMs` to stop the
// stray, and a control's stray is killed by the test once seen (it would write on into a
// folder being removed: ENOTEMPTY on a busy CI machine, 2026-11-30).
import { readFile, stat } from "node:fs/promises";

/** Whether the file's modification time moved on within `windowMs`. */
export async function beats(file: string, windowMs = 1500): Promise<boolean> {
  const first = await stat(file).catch(() => null);
  await new Promise((done) => setTimeout(done, windowMs));
  const second = await stat(file).catch(() => null);
  return first !== null && second !== null && second.mtimeMs > first.mtimeMs;
}

/** Whether the heartbeat stops (a window with no beat) within `withinMs`. */
export async function stopsBeating(file: string, withinMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  do {
    if (!(await beats(file))) return true;
  } while (Date.now() < deadline);
  return false;
}

/**
 * Kills the stray whose pid its heartbeat names: only for a control run without the sandbox
 * (inside it the pid is the sandbox's own, another process's on the host).
 */
export async function killStray(file: string): Promise<void> {
  const pid = Number((await readFile(file, "utf8").catch(() => "")).split(" ")[0]);
  if (!Number.isInteger(pid) || pid <= 1) return;
  try {
    process.kill(pid, "SIGKILL");
  } catch {
    // already gone
  }
}
