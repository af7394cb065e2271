// The selftest report: one row per corpus candidate, then caught/total per hack class and
// the throughput of the whole run.
import { renderTable } from "./table.js";

export type SelftestRow = {
  file: string;
  hack: number | null;
  expect: "pass" | "reject";
  reasons: string[];
  got: { ok: boolean; status: string; reason: string | null } | null;
  met: boolean;
  seconds: { compile: number; verify: number; time: number; total: number };
  message: string;
  /** --json only: the own-kernel verdict, GPU-time shares and the timed configurations. */
  detail?: {
    ownKernel: string | null;
    kernelShares: { own: number; library: number; torch: number; harmless: number } | null;
    bench: {
      name: string;
      launchBound: boolean;
      candidateMs: number | null;
      eagerMs: number | null;
      floorMs: number;
    }[];
    notes: string[];
  };
};

export type SelftestSummary = {
  candidates: number;
  met: number;
  /** Entries not run: their task (public data) is not on this machine. */
  skipped: readonly string[];
  wallSeconds: number;
  candidatesPerMinute: number;
};

const s = (x: number) => x.toFixed(1);

export function renderSelftest(rows: readonly SelftestRow[], summary: SelftestSummary): string {
  const table = renderTable(
    ["", "candidate", "hack", "expected", "got", "compile s", "verify s", "time s"],
    rows.map((row) => [
      row.met ? "ok" : "MISS",
      row.file,
      row.hack === null ? "-" : String(row.hack),
      row.expect === "pass"
        ? row.hack === null
          ? "pass"
          : "pass, launch-bound"
        : row.reasons.join("|"),
      row.got === null ? "-" : row.got.ok ? "pass" : `${row.got.reason ?? row.got.status}`,
      s(row.seconds.compile),
      s(row.seconds.verify),
      s(row.seconds.time),
    ]),
    ["left", "left", "right", "left", "left", "right", "right", "right"],
  );
  const classes = new Map<string, { caught: number; total: number }>();
  for (const row of rows) {
    // class 14 passes, timed and marked launch-bound: it still counts under its class
    const key =
      row.hack !== null
        ? `hack ${row.hack}`
        : row.expect === "pass"
          ? "correct (pass)"
          : "isolation";
    const entry = classes.get(key) ?? { caught: 0, total: 0 };
    entry.total += 1;
    if (row.met) entry.caught += 1;
    classes.set(key, entry);
  }
  const order = (key: string) =>
    key.startsWith("hack ") ? Number(key.slice(5)) : key === "isolation" ? 100 : 0;
  const perClass = renderTable(
    ["class", "as expected / total"],
    [...classes.entries()]
      .sort(([a], [b]) => order(a) - order(b))
      .map(([key, v]) => [key, `${v.caught} / ${v.total}`]),
  );
  const misses = rows
    .filter((row) => !row.met)
    .map((row) => `MISS ${row.file}: ${why(row.message)}`);
  return [
    table,
    "",
    perClass,
    "",
    `${summary.met} / ${summary.candidates} as expected in ${s(summary.wallSeconds)} s: ` +
      `${summary.candidatesPerMinute.toFixed(1)} candidates per minute`,
    ...(summary.skipped.length === 0
      ? []
      : [
          `skipped ${summary.skipped.length} (their task's public data is not on this machine: EVOKERNEL_SHARED_DATA): ${summary.skipped.join(", ")}`,
        ]),
    ...misses,
  ].join("\n");
}

/**
 * A miss's message in one line: its first line, and where more follows (a harness's own
 * failure: its output's tail), the last line of that too, the exception a traceback ends with.
 */
function why(message: string): string {
  const lines = message.split("\n").filter((line) => line.trim() !== "");
  const first = (lines[0] ?? "").slice(0, 300);
  const last = lines.length > 1 ? (lines[lines.length - 1] ?? "").trim().slice(0, 300) : "";
  return last === "" || first.includes(last) ? first : `${first}: ${last}`;
}
