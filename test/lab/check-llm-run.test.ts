// lab/check-llm-run.mjs on the LLM stand-in's row_sum run from the H100 (2026-11-26,
// results branch: results/gpu-2026-11-26b; its requests, archive and result are copied whole into
// test/fixtures/lab/check-llm-run/): none of the scripted kernels was faster than the baseline
// beyond the noise there, so the run is a true "no win". With --real-gpu (how
// lab/gpu-llm-standin.sh calls it) that is checked as one; without it (the fake harness,
// whose timings are scripted) the missing win fails, as does a no-win for any other reason.
import { execa } from "execa";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const checker = resolve("lab/check-llm-run.mjs");
const run = resolve("test/fixtures/lab/check-llm-run/gpu-2026-11-26b-row_sum");
const script = resolve("test/fixtures/llm-standin/row_sum.json");

async function check(result: string, ...extra: string[]) {
  const args = ["--script", script, "--requests", join(run, "requests.jsonl")];
  args.push("--archive", join(run, "archive.jsonl"), "--result", result, "--json", ...extra);
  const ran = await execa(process.execPath, [checker, ...args], { reject: false });
  const report = JSON.parse(ran.stdout) as { ok: boolean; checks: { ok: boolean; what: string }[] };
  return { exit: ran.exitCode, failed: report.checks.filter((c) => !c.ok).map((c) => c.what) };
}

describe("check-llm-run on a real GPU's run", () => {
  it("accepts a no-win where nothing was faster beyond the noise, with --real-gpu only", async () => {
    const result = join(run, "out", "result.json");
    expect(await check(result, "--real-gpu")).toEqual({ exit: 0, failed: [] });
    const scripted = await check(result);
    expect(scripted.exit).toBe(1);
    expect(scripted.failed[0]).toMatch(/^the run is a win/);
  });

  it("accepts a no-win that names the candidate its verdict calls within the noise", async () => {
    // the H100's second row_sum run (results branch: results/gpu-2026-11-26c): c5 re-timed at 1.00×,
    // lower bound 0.99×, "within the noise", and named as the best so timed
    const second = resolve("test/fixtures/lab/check-llm-run/gpu-2026-11-26c-row_sum");
    const args = ["--script", script, "--requests", join(second, "requests.jsonl")];
    args.push(
      "--archive",
      join(second, "archive.jsonl"),
      "--result",
      join(second, "out", "result.json"),
    );
    const ran = await execa(process.execPath, [checker, ...args, "--json", "--real-gpu"], {
      reject: false,
    });
    const report = JSON.parse(ran.stdout) as { checks: { ok: boolean; what: string }[] };
    expect(report.checks.filter((c) => !c.ok).map((c) => c.what)).toEqual([]);
    expect(ran.exitCode).toBe(0);
  });

  it("still fails a no-win for another reason", async () => {
    const dir = await mkdtemp(join(tmpdir(), "evk-llm-check-"));
    try {
      const result = JSON.parse(await readFile(join(run, "out", "result.json"), "utf8")) as Record<
        string,
        unknown
      >;
      const broken = join(dir, "result.json");
      await writeFile(
        broken,
        JSON.stringify({ ...result, verdict: "the baseline did not verify" }),
      );
      const checked = await check(broken, "--real-gpu");
      expect(checked.exit).toBe(1);
      expect(checked.failed.join("\n")).toMatch(/nothing was faster beyond the noise/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
