// The report for a set of evaluated candidates: per candidate its static check, then the
// build log of a failed build or the verification (and timing) tables; a summary when
// there are several.
import type { CandidateResult } from "../cascade.js";
import { renderBench } from "./bench-table.js";
import { formatSeconds, indent } from "./format.js";
import { renderTable } from "./table.js";
import { renderStatic, renderVerify } from "./verify-table.js";

export function renderCandidate(result: CandidateResult): string {
  const sections = [renderStatic(result.candidate, result.static)];
  if (result.build !== null && !result.build.ok) {
    sections.push(`build failed (${result.build.format}):\n${indent(result.message)}`);
  }
  // The verify step's time as the progress line gave it (quick check included in a screen).
  if (result.verify !== null) sections.push(renderVerify(result.verify, result.seconds.verify));
  if (result.bench !== null) sections.push(renderBench(result.bench));
  return sections.join("\n\n");
}

export function renderCandidates(results: readonly CandidateResult[]): string {
  const each = results.map(renderCandidate);
  if (results.length < 2) return each.join("\n");
  const summary = renderTable(
    ["candidate", "status", "reason", "compile", "verify", "total"],
    results.map((result) => [
      result.candidate,
      result.status,
      result.reason ?? "",
      formatSeconds(result.seconds.compile),
      formatSeconds(result.seconds.verify),
      formatSeconds(result.seconds.total),
    ]),
    ["left", "left", "left", "right", "right", "right"],
  );
  return [...each, summary].join("\n\n");
}
