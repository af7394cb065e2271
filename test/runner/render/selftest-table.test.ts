import { describe, expect, it } from "vitest";
import { renderSelftest, type SelftestRow } from "../../../runner/src/render/selftest-table.js";

function row(message: string, met = false): SelftestRow {
  return {
    file: "runner/corpus/kb_batchnorm/09c_eval_running_statistics.py",
    hack: 9,
    expect: "reject",
    reasons: ["mismatch"],
    got: { ok: false, status: "error", reason: "harness-error" },
    met,
    seconds: { compile: 0, verify: 0, time: 0, total: 0 },
    message,
  };
}

const summary = { candidates: 1, met: 0, skipped: [], wallSeconds: 10, candidatesPerMinute: 6 };

describe("the selftest report's misses", () => {
  it("end with what a harness's failure ended with, not only 'the harness failed'", () => {
    // on the H100 (2026-11-26) two misses said only "the harness failed (exit 4)"
    const text = renderSelftest(
      [
        row(
          'the harness failed (exit 4)\nTraceback (most recent call last):\n  File "x.py", line 1\nFileNotFoundError: no such task\n',
        ),
      ],
      summary,
    );
    expect(text).toContain(
      "MISS runner/corpus/kb_batchnorm/09c_eval_running_statistics.py: the harness failed (exit 4): FileNotFoundError: no such task",
    );
  });

  it("say a one-line message as it is, and list no row that met its expectation", () => {
    const text = renderSelftest([row("wrong on 8192x8192"), row("fine", true)], {
      ...summary,
      candidates: 2,
    });
    expect(text.split("\n").filter((line) => line.startsWith("MISS "))).toHaveLength(2);
    expect(text.split("\n").filter((line) => line.startsWith("MISS runner"))).toEqual([
      "MISS runner/corpus/kb_batchnorm/09c_eval_running_statistics.py: wrong on 8192x8192",
    ]);
  });
});
