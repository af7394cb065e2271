// What a person reads after `evokernel optimize`: the verdict, the final timing per
// configuration, how the search went (candidates, stages, best-so-far, tokens and money)
// and the winner's provenance.
import type { Result, Spread } from "#shared/result.js";
import { formatMs, formatPercent, formatRatio, formatSeconds } from "./format.js";
import { renderTable } from "./table.js";

export function renderOptimizeSummary(result: Result, written: readonly string[] = []): string {
  const sections = [headline(result), timesTable(result), search(result), provenance(result)];
  if (written.length > 0) sections.push(`written: ${written.join(", ")}`);
  return sections.filter((section) => section !== "").join("\n\n");
}

function headline(result: Result): string {
  const { device } = result;
  const where =
    `${result.task.name} on ${device.gpu} (driver ${device.driver ?? "–"}, ` +
    `CUDA ${device.cuda ?? "–"}, torch ${device.torch})`;
  const verdict = result.win ? "WIN" : "no win";
  const verified = result.verification.configs;
  const heldout = verified.filter((config) => config.heldout).length;
  const checked =
    verified.length === 0
      ? ""
      : `\nverified: ${verified.filter((config) => config.ok).length}/${verified.length} configurations (${heldout} held-out)`;
  return `${where}\n${verdict}: ${result.verdict}${checked}`;
}

function timesTable(result: Result): string {
  if (result.configs.length === 0) return "";
  const rows = result.configs.map((config) => [
    config.name,
    formatSpread(config.baseline),
    formatSpread(config.best),
    formatMs(config.floorMs),
    formatPercent(config.percentOfFloor.best ?? config.percentOfFloor.baseline),
    formatRatio(config.speedup.baseline),
    formatRatio(config.speedup.eager),
    formatRatio(config.speedup.compile),
    config.clearlyFaster ? "yes" : config.clearlySlower ? "slower" : "no",
  ]);
  const { speedup } = result;
  rows.push([
    "geomean",
    "",
    "",
    "",
    "",
    formatRatio(speedup.baseline),
    formatRatio(speedup.eager),
    formatRatio(speedup.compile),
    speedup.lowerBound === null ? "" : `≥ ${formatRatio(speedup.lowerBound)}`,
  ]);
  return renderTable(
    [
      "config",
      "baseline ms",
      "best ms",
      "floor ms",
      "% of floor",
      "vs baseline",
      "vs eager",
      "vs compile",
      "beyond noise",
    ],
    rows,
    ["left", ...Array<"right">(8).fill("right")],
  );
}

function search(result: Result): string {
  const { search: s, run, usage } = result;
  const failed = Object.entries(s.failedAt)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([stage, count]) => `${stage} ${count}`);
  const history = result.history
    .map((point) => `${point.id} ${formatRatio(point.fitness)}`)
    .join(" → ");
  const tokens =
    `${formatCount(usage.inputTokens)} in, ${formatCount(usage.outputTokens)} out ` +
    `(cache ${formatCount(usage.cacheReadTokens)} read, ${formatCount(usage.cacheWriteTokens)} written)`;
  return [
    `search: ${s.candidates}/${s.budget.candidates} candidates in ${formatSeconds(s.seconds)} ` +
      `(config ${run.config}, proposer ${run.proposer}${run.model === null ? "" : `, model ${run.model}`}, ` +
      `seed ${run.seed}), stopped: ${STOPPED[s.stoppedBy]}`,
    `  evaluated ${s.evaluated}, passed ${s.passed}, duplicates ${s.duplicates}, ` +
      `no proposal ${s.proposalFailures}` +
      (failed.length === 0 ? "" : `; failed at ${failed.join(", ")}`),
    `  best so far: ${history === "" ? "–" : history}`,
    `  tokens: ${tokens}; $${usage.usd.toFixed(2)} of $${s.budget.usd.toFixed(2)}`,
    `  archive: ${run.archive}`,
  ].join("\n");
}

function provenance(result: Result): string {
  const best = result.best;
  const rejected = result.verification.rejected.map(
    (entry) => `${entry.id} (${entry.reason ?? "failed"})`,
  );
  const lines: string[] = [];
  if (rejected.length > 0) lines.push(`passed over in the final checks: ${rejected.join(", ")}`);
  if (best !== null) {
    const from = best.parents.length === 0 ? "" : ` from ${best.parents.join(", ")}`;
    const defines = Object.entries(best.defines).map(([name, value]) => `${name}=${value}`);
    lines.push(
      `best: ${best.id} by ${best.proposer}${from}` +
        (defines.length === 0 ? "" : ` with ${defines.join(" ")}`),
    );
    if (best.flags.length > 0) {
      lines.push(
        `  built with nvcc ${best.flags.join(" ")}: pass these flags where the kernel is built`,
      );
    }
    if (best.insight.trim() !== "") lines.push(`  ${best.insight.trim().replace(/\s+/g, " ")}`);
  }
  return lines.join("\n");
}

const STOPPED: Record<Result["search"]["stoppedBy"], string> = {
  candidates: "candidate budget spent",
  seconds: "wall time spent",
  usd: "money budget spent",
  interrupted: "interrupted",
  proposer: "the proposer had nothing more to try",
};

function formatSpread(spread: Spread | null): string {
  if (spread === null) return "–";
  const half = (spread.p80Ms - spread.p20Ms) / 2;
  const text = formatMs(spread.medianMs);
  const decimals = text.includes(".") ? (text.split(".")[1]?.length ?? 0) : 0;
  return `${text} ± ${half.toFixed(decimals)}`;
}

function formatCount(count: number): string {
  if (count >= 1_000_000) return `${(count / 1_000_000).toFixed(1)}M`;
  if (count >= 1_000) return `${(count / 1_000).toFixed(1)}k`;
  return String(count);
}
