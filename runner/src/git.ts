// Every git command the runner runs (processes start in src/process/spawn.ts). Read-only on the user's
// repository: refs are resolved and files read out of commits (`git show`), never checked
// out, so the working tree and the index stay as the user left them.
import { UsageError } from "./errors.js";
import { GIT_SAFE_ARGS, GIT_SAFE_ENV } from "#shared/git-safety.js";
import { spawnProcess } from "#process/spawn.js";

export type Git = {
  /** The repository's top folder. */
  root: string;
  /** A commit's full SHA; a UsageError saying what to do when the ref names none. */
  resolve(ref: string): Promise<string>;
  /** The commit that `git merge-base a b` finds, or null when they share none. */
  mergeBase(a: string, b: string): Promise<string | null>;
  /** Whether the ref names a commit here. */
  hasRef(ref: string): Promise<boolean>;
  /** Paths of the files that differ between two commits (renames as a delete and an add). */
  changedFiles(base: string, head: string): Promise<string[]>;
  /** Every file of a commit's tree, relative to the root. */
  listFiles(commit: string): Promise<string[]>;
  /** A file's bytes at a commit, or null when the commit has no such file. */
  readFile(commit: string, path: string): Promise<Uint8Array | null>;
  /** Several files of one commit through one git process; missing ones are left out. */
  readFiles(commit: string, paths: readonly string[]): Promise<Map<string, Uint8Array>>;
  /** The `origin` remote's URL, or null. */
  originUrl(): Promise<string | null>;
};

/** Opens the repository that holds `cwd`; a UsageError when there is none. */
export async function openGit(cwd: string): Promise<Git> {
  const top = await run(cwd, ["rev-parse", "--show-toplevel"]);
  if (top.exitCode !== 0) {
    throw new UsageError(
      `${cwd} is not in a git repository: run evokernel review (or job) inside a clone (${firstLine(top.stderr)})`,
    );
  }
  const root = top.stdout.trim();
  const git = (args: readonly string[]) => run(root, args);
  async function readBlob(commit: string, path: string): Promise<Uint8Array | null> {
    const result = await spawnProcess(
      "git",
      [...GIT_SAFE_ARGS, "cat-file", "blob", `${commit}:${path}`],
      {
        cwd: root,
        env: GIT_SAFE_ENV,
        extendEnv: true,
        reject: false,
        encoding: "buffer",
        // A file's bytes as they are: execa would strip its final newline.
        stripFinalNewline: false,
        stdin: "ignore",
      },
    );
    return result.exitCode === 0 ? result.stdout : null;
  }
  return {
    root,
    async resolve(ref) {
      const result = await git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
      if (result.exitCode === 0) return result.stdout.trim();
      throw new UsageError(
        `"${ref}" names no commit in ${root}: give a branch, tag or SHA that exists here ` +
          "(fetch it first, e.g. git fetch origin main; a shallow clone needs fetch-depth: 0)",
      );
    },
    async mergeBase(a, b) {
      const result = await git(["merge-base", a, b]);
      return result.exitCode === 0 ? result.stdout.trim() : null;
    },
    async hasRef(ref) {
      const result = await git(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`]);
      return result.exitCode === 0;
    },
    async changedFiles(base, head) {
      const result = await check(git(["diff", "--name-only", "--no-renames", "-z", base, head]));
      return splitZ(result);
    },
    async listFiles(commit) {
      return splitZ(await check(git(["ls-tree", "-r", "-z", "--name-only", commit])));
    },
    readFile: readBlob,
    async readFiles(commit, paths) {
      if (paths.length === 0) return new Map();
      // Paths with a newline cannot be asked for on --batch's line protocol: read them alone.
      const plain = paths.filter((path) => !path.includes("\n"));
      const result = await spawnProcess("git", [...GIT_SAFE_ARGS, "cat-file", "--batch"], {
        cwd: root,
        env: GIT_SAFE_ENV,
        extendEnv: true,
        encoding: "buffer",
        input: plain.map((path) => `${commit}:${path}\n`).join(""),
        reject: false,
      });
      if (result.exitCode !== 0) {
        throw new Error(`git cat-file --batch failed (exit ${result.exitCode ?? "?"})`);
      }
      const files = parseBatch(Buffer.from(result.stdout), plain);
      for (const path of paths.filter((name) => name.includes("\n"))) {
        const bytes = await readBlob(commit, path);
        if (bytes !== null) files.set(path, bytes);
      }
      return files;
    },
    async originUrl() {
      const result = await git(["remote", "get-url", "origin"]);
      return result.exitCode === 0 ? result.stdout.trim() : null;
    },
  };
}

type Run = { exitCode: number; stdout: string; stderr: string; command: string };

async function run(cwd: string, args: readonly string[]): Promise<Run> {
  const result = await spawnProcess("git", [...GIT_SAFE_ARGS, ...args], {
    cwd,
    env: GIT_SAFE_ENV,
    extendEnv: true,
    reject: false,
    stdin: "ignore",
    stripFinalNewline: false,
  });
  return {
    exitCode: result.exitCode ?? -1,
    stdout: result.stdout,
    stderr: result.stderr,
    command: `git ${args.join(" ")}`,
  };
}

async function check(pending: Promise<Run>): Promise<string> {
  const result = await pending;
  if (result.exitCode === 0) return result.stdout;
  throw new Error(`${result.command} failed (exit ${result.exitCode}): ${result.stderr.trim()}`);
}

/**
 * `git cat-file --batch` output, one entry per path asked for, in order: a header line
 * `<oid> <type> <size>` and that many bytes and a newline, or `<name> missing`.
 */
function parseBatch(output: Buffer, paths: readonly string[]): Map<string, Uint8Array> {
  const files = new Map<string, Uint8Array>();
  let offset = 0;
  for (const path of paths) {
    const end = output.indexOf(0x0a, offset);
    if (end === -1) break;
    const header = output.subarray(offset, end).toString("utf8");
    offset = end + 1;
    const match = /^[0-9a-f]+ (\w+) (\d+)$/.exec(header);
    if (match === null) continue; // "<name> missing" (or ambiguous): no content follows
    const size = Number(match[2]);
    if (match[1] === "blob") files.set(path, output.subarray(offset, offset + size));
    offset += size + 1;
  }
  return files;
}

function splitZ(text: string): string[] {
  return text.split("\0").filter((entry) => entry !== "");
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0] ?? "";
}
