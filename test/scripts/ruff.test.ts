// scripts/ruff.mjs (npm run lint:py): ruff's WebAssembly build with runner/harness/pyproject.toml's
// [tool.ruff], on files given to it. A lint finding or a file ruff would reformat fails it (exit
// 1, named); --fix writes the formatting; a clean file passes.
import { execa } from "execa";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const ruff = resolve("scripts/ruff.mjs");
const run = (...args: string[]) => execa(process.execPath, [ruff, ...args], { reject: false });

describe("scripts/ruff.mjs", () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "evk-ruff-"));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("names a lint finding and a file to reformat, and fails", async () => {
    const file = join(dir, "bad.py");
    await writeFile(file, "import os\nx = {  'a':1 }\n");
    const ran = await run(file);
    expect(ran.exitCode).toBe(1);
    expect(ran.stdout).toMatch(/bad\.py:1:\d+: F401 /);
    expect(ran.stdout).toMatch(/bad\.py: would be reformatted/);
  });

  it("keeps the project's line length (120)", async () => {
    const file = join(dir, "long.py");
    await writeFile(file, `x = "${"a".repeat(110)}"\ny = "${"b".repeat(120)}"\n`);
    const ran = await run(file);
    expect(ran.stdout).toMatch(/long\.py:2:121: E501 /);
    expect(ran.stdout).not.toMatch(/long\.py:1:/);
  });

  it("formats with --fix, after which the file is clean", async () => {
    const file = join(dir, "ugly.py");
    await writeFile(file, "x = {  'a':1 }\n");
    expect((await run("--fix", file)).exitCode).toBe(1);
    expect(await readFile(file, "utf8")).toBe('x = {"a": 1}\n');
    const again = await run(file);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).toMatch(/1 files, 0 lint findings, 0 to reformat/);
  });

  it("refuses an unknown option with its usage (exit 2)", async () => {
    const ran = await run("--bogus");
    expect(ran.exitCode).toBe(2);
    expect(ran.stderr).toMatch(/unknown option --bogus/);
  });
});
