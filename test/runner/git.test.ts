// The git seam on a real repository: files read out of a commit byte for byte (binary,
// CRLF, odd names), missing ones left out, changed files between commits, refs resolved.
import { execa } from "execa";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openGit, type Git } from "../../runner/src/git.js";

let repo: string;
let git: Git;
let first: string;
let second: string;
const binary = Buffer.from([0, 1, 2, 10, 13, 10, 255, 0x0a]);

async function run(...args: string[]): Promise<string> {
  return (await execa("git", args, { cwd: repo })).stdout;
}

beforeAll(async () => {
  repo = await mkdtemp(join(tmpdir(), "evokernel-git-"));
  await run("init", "-q", "-b", "main");
  await run("config", "user.email", "test@example.com");
  await run("config", "user.name", "test");
  await run("config", "core.autocrlf", "false");
  await writeFile(join(repo, "a.cu"), "int a;\r\nint b;\r\n");
  await writeFile(join(repo, "blob.bin"), binary);
  await writeFile(join(repo, "with space.py"), "x = 1\n");
  await run("add", "-A");
  await run("commit", "-q", "-m", "first");
  first = await run("rev-parse", "HEAD");
  await writeFile(join(repo, "a.cu"), "int a;\r\nint c;\r\n");
  await run("commit", "-q", "-am", "second");
  second = await run("rev-parse", "HEAD");
  git = await openGit(repo);
});

afterAll(async () => {
  await rm(repo, { recursive: true, force: true });
});

describe("the git seam", () => {
  it("reads several files of a commit in one go, byte for byte", async () => {
    const files = await git.readFiles(first, ["a.cu", "blob.bin", "with space.py", "missing.cu"]);
    expect([...files.keys()]).toEqual(["a.cu", "blob.bin", "with space.py"]);
    expect(Buffer.from(files.get("a.cu") ?? []).toString()).toBe("int a;\r\nint b;\r\n");
    expect(Buffer.from(files.get("blob.bin") ?? [])).toEqual(binary);
    expect(Buffer.from(files.get("with space.py") ?? []).toString()).toBe("x = 1\n");
    expect(await git.readFile(second, "missing.cu")).toBeNull();
  });

  it("lists, diffs and resolves", async () => {
    expect(await git.listFiles(first)).toEqual(["a.cu", "blob.bin", "with space.py"]);
    expect(await git.changedFiles(first, second)).toEqual(["a.cu"]);
    expect(await git.resolve("main")).toBe(second);
    expect(await git.mergeBase(first, second)).toBe(first);
    expect(await git.hasRef("no-such-ref")).toBe(false);
    await expect(git.resolve("no-such-ref")).rejects.toThrow(/names no commit/);
  });
});
