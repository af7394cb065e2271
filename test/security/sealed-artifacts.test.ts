// A candidate's code cannot rewrite another candidate's built library. The build cache is
// writable inside the sandbox, so one candidate's code (an evk kernel's host code, run at its
// verification) could rewrite the base branch's library there and make the base slower before
// it is timed. A built library is sealed (runner/src/harness/sealed.ts): copied, when its build
// is reported, into a folder every sandbox sees read-only, and loaded from there.
import { existsSync } from "node:fs";
import { chmod, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from "node:fs/promises";
import { delimiter, join } from "node:path";
import { tmpdir } from "node:os";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { BuildRecord } from "#shared/contract/records.js";
import { pythonInvocation, runProcess } from "../../runner/src/harness/exec.js";
import { sealBuild } from "../../runner/src/harness/sealed.js";
import { sealedDir } from "../../runner/src/sandbox/sandbox.js";
import { repo, runCli } from "../helpers/cli.js";
import { inCi, skipWithoutPython } from "../helpers/python.js";

let dir: string;
const hash = "0123456789abcdef".repeat(4);

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-sealed-"));
});

afterEach(async () => {
  vi.unstubAllEnvs();
  await rm(dir, { recursive: true, force: true });
});

function record(artifact: string): BuildRecord {
  const base = { schema: 1, kind: "build", ok: true, format: "evk", hash, artifact };
  return { ...base, cached: false, log: "", seconds: 1 } as BuildRecord;
}

async function entry(cache: string, name = "candidate.so", text = "ORIGINAL"): Promise<string> {
  const folder = join(cache, hash.slice(0, 24));
  await mkdir(folder, { recursive: true });
  await writeFile(join(folder, name), text);
  return join(folder, name);
}

describe("sealBuild", () => {
  it("copies the library out of the cache, once a run, read-only", async () => {
    const cache = join(dir, "cache");
    const library = await entry(cache);
    const sealed = await sealBuild(record(library), cache);
    expect(sealed.ok).toBe(true);
    expect(sealed.artifact).toBe(join(sealedDir(), hash.slice(0, 24), "candidate.so"));
    expect(await readFile(sealed.artifact ?? "", "utf8")).toBe("ORIGINAL");
    // rewritten in the cache after its seal: a later (cached) build of it still gets the seal
    await writeFile(library, "REWRITTEN");
    const again = await sealBuild({ ...record(library), cached: true }, cache);
    expect(await readFile(again.artifact ?? "", "utf8")).toBe("ORIGINAL");
  });

  it("refuses a library outside its build's own folder, or through a link", async () => {
    const cache = join(dir, "cache");
    await entry(cache);
    const elsewhere = join(dir, "key.pem");
    await writeFile(elsewhere, "SECRET");
    const outside = await sealBuild(record(elsewhere), cache);
    expect([outside.ok, outside.artifact]).toEqual([false, null]);
    expect(outside.log).toMatch(/refused: .*key\.pem is not in its build's folder/);
    const other = join(cache, "ffffffffffffffffffffffff", "candidate.so");
    await mkdir(join(cache, "ffffffffffffffffffffffff"));
    await writeFile(other, "ANOTHER");
    expect((await sealBuild(record(other), cache)).ok).toBe(false);
    const link = join(cache, hash.slice(0, 24), "link.so");
    await symlink(elsewhere, link);
    expect((await sealBuild(record(link), cache)).ok).toBe(false);
    // a Python candidate's artifact, and a failed build, are left as they are
    const py = { ...record(elsewhere), format: "py" } as BuildRecord;
    expect(await sealBuild(py, cache)).toEqual(py);
  });
});

const WRITE =
  "import sys\ntry:\n    open(sys.argv[1], 'a').write('SLOWER')\n    print('wrote')\nexcept OSError as e:\n    print('refused', e.errno)\n";

describe.skipIf(skipWithoutPython)("a sealed library, inside the sandbox", () => {
  it("cannot be rewritten, while the cache's copy could be", async () => {
    const cache = join(dir, "cache");
    await mkdir(cache);
    await chmod(dir, 0o755);
    vi.stubEnv("EVOKERNEL_SANDBOX", "on");
    vi.stubEnv("EVOKERNEL_CACHE", cache);
    const library = await entry(cache);
    await chmod(library, 0o666); // anyone's to write: only the seal can refuse it
    const sealed = await sealBuild(record(library), cache);
    const run = async (target: string) => {
      const invocation = await pythonInvocation(["-I", "-c", WRITE, target]);
      const ran = await runProcess(invocation.file, invocation.args, {
        env: invocation.env,
        cwd: invocation.cwd,
        timeoutMs: 120_000,
      });
      expect(ran.exitCode, ran.output).toBe(0);
      return ran.output.trim().split("\n").at(-1);
    };
    expect(await run(sealed.artifact ?? "")).toMatch(/^refused/);
    expect(await readFile(sealed.artifact ?? "", "utf8")).toBe("ORIGINAL");
    expect(await run(library)).toBe("wrote"); // the attack the seal stops
  });
});

const nvcc = [
  ...(process.env["PATH"] ?? "").split(delimiter).map((folder) => join(folder, "nvcc")),
  "/usr/local/cuda/bin/nvcc",
].find((file) => existsSync(file));

describe.skipIf(skipWithoutPython || (nvcc === undefined && !inCi))("the CLI", () => {
  it("verifies and times a kernel from its sealed library, not from the build cache", async () => {
    const cache = join(dir, "cache");
    const run = await runCli(["verify", "softmax", "--device", "cpu", "--json"], {
      cwd: repo,
      env: { EVOKERNEL_CACHE: cache },
    });
    const built = /"artifact": "([^"]+)"/.exec(run.stdout)?.[1];
    expect(built, run.stdout + run.stderr).toMatch(
      /evokernel-sealed-[^/]+\/[0-9a-f]{24}\/candidate\.so$/,
    );
    expect(built?.startsWith(cache)).toBe(false);
  }, 600_000);
});
