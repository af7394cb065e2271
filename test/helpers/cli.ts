// Spawns the bundled CLI (see global-setup.ts) as a user would.
import { execa } from "execa";
import { fileURLToPath } from "node:url";
import { inject } from "vitest";

export const repo = fileURLToPath(new URL("../..", import.meta.url));

export type CliRun = { exitCode: number; stdout: string; stderr: string };

/**
 * Starts the CLI and sends it SIGINT (Ctrl-C, or `options.signal`) once stderr has matched
 * `when`; resolves to how it ended.
 */
export async function interruptCli(
  args: readonly string[],
  when: RegExp,
  options: { cwd?: string; env?: Record<string, string>; signal?: NodeJS.Signals } = {},
): Promise<CliRun> {
  const child = execa(process.execPath, [inject("cliBundle"), ...args], {
    cwd: options.cwd ?? repo,
    env: { EVOKERNEL_ROOT: repo, ...options.env },
    reject: false,
    timeout: 1_200_000,
  });
  let seen = "";
  let sent = false;
  child.stderr.on("data", (chunk: Buffer) => {
    seen += chunk.toString();
    if (!sent && when.test(seen)) {
      sent = true;
      child.kill(options.signal ?? "SIGINT");
    }
  });
  const result = await child;
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}

export async function runCli(
  args: readonly string[],
  options: { cwd?: string; env?: Record<string, string>; timeoutMs?: number } = {},
): Promise<CliRun> {
  const result = await execa(process.execPath, [inject("cliBundle"), ...args], {
    cwd: options.cwd ?? repo,
    // The bundle lives in a temporary folder: tell it where the repository is.
    env: { EVOKERNEL_ROOT: repo, ...options.env },
    reject: false,
    timeout: options.timeoutMs ?? 1_200_000,
  });
  return { exitCode: result.exitCode ?? -1, stdout: result.stdout, stderr: result.stderr };
}
