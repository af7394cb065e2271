// What a person reads after `evokernel verify`: the verdict, a row per configuration, and
// for a failure the reason, the first mismatch and the failed checks.
import type { Mismatch, StaticRecord, VerifyRecord } from "#shared/contract/records.js";
import { formatError, formatSeconds, indent } from "./format.js";
import { renderTable } from "./table.js";

/**
 * `wallSeconds`: the verify step as the command's progress line timed it (the harness's
 * process, the wait for the GPU and its own work); then the headline gives that time, and
 * the harness's own load and checks as its parts, so the two lines never disagree.
 */
export function renderVerify(record: VerifyRecord, wallSeconds?: number): string {
  const sections = [headline(record, wallSeconds), configTable(record)];
  if (!record.ok) sections.push(failure(record));
  const failed = record.checks.filter((check) => !check.ok);
  if (failed.length > 0) {
    sections.push(
      ["failed checks:", ...failed.map((check) => `  - ${check.name}: ${check.detail}`)].join("\n"),
    );
  }
  if (record.warnings.length > 0) {
    sections.push(["warnings:", ...record.warnings.map((warning) => `  - ${warning}`)].join("\n"));
  }
  const shares = kernelShares(record);
  if (shares !== "") sections.push(shares);
  return sections.filter((section) => section !== "").join("\n\n");
}

function headline(record: VerifyRecord, wallSeconds?: number): string {
  const seconds = record.seconds.load + record.seconds.verify;
  const where = `${record.task} · ${record.candidate} (${record.format}) · ${record.device.name}`;
  const seed = record.seed === null ? "" : ` (seed ${record.seed})`;
  // a pass on the CPU compared outputs only (issue 33.8): never shown as a verdict
  const cpu =
    record.ok && record.device.backend === "cpu" ? " (CPU check only, not a verdict)" : "";
  if (wallSeconds === undefined || wallSeconds <= 0)
    return `${where}\n${record.status.toUpperCase()}${cpu} in ${formatSeconds(seconds)}${seed}`;
  const parts =
    `in the harness: loading ${formatSeconds(record.seconds.load)}, checks ` +
    `${formatSeconds(record.seconds.verify)}; the rest starting its process and waiting for the device`;
  return `${where}\n${record.status.toUpperCase()}${cpu} in ${formatSeconds(Math.max(wallSeconds, seconds))} (${parts})${seed}`;
}

/** Where its GPU time went: its own kernels, vendor libraries (cuBLAS …), PyTorch's. */
function kernelShares(record: VerifyRecord): string {
  const shares = record.kernelShares;
  if (shares === null) return "";
  const pct = (share: number) => `${Math.round(share * 100)} %`;
  const line =
    `GPU time: ${pct(shares.own)} its own kernels, ${pct(shares.library)} library kernels, ` +
    `${pct(shares.torch)} PyTorch kernels, ${pct(shares.harmless)} fills and copies`;
  if (record.libraryKernels.length === 0) return line;
  return `${line}\n  library: ${record.libraryKernels.slice(0, 3).join(", ")}`;
}

function configTable(record: VerifyRecord): string {
  if (record.configs.length === 0) return "";
  const rows = record.configs.map((config) => [
    config.name + (config.heldout ? " (held out)" : "") + (config.derived ? " (derived)" : ""),
    config.ok ? "ok" : "FAIL",
    String(config.trials),
    formatError(config.maxAbs),
    formatError(config.normRel),
    config.reason ?? "",
  ]);
  return renderTable(["config", "ok", "trials", "max abs", "norm rel", "reason"], rows, [
    "left",
    "left",
    "right",
    "right",
    "right",
    "left",
  ]);
}

function failure(record: VerifyRecord): string {
  const hack = record.hack === null ? "" : ` (hack ${record.hack})`;
  const reason =
    record.reason === null || record.reason === record.status ? "" : `: ${record.reason}`;
  const lines = [`${record.status}${reason}${hack}`, indent(record.message)];
  if (record.mismatch !== null) lines.push(describeMismatch(record.mismatch));
  return lines.filter((line) => line.trim() !== "").join("\n");
}

function describeMismatch(mismatch: Mismatch): string {
  const at = mismatch.index.length === 0 ? "" : ` at [${mismatch.index.join(", ")}]`;
  const values = `: got ${mismatch.got ?? "NaN/Inf"}, expected ${mismatch.expected ?? "NaN/Inf"}`;
  return (
    `first mismatch: config ${mismatch.config}, trial ${mismatch.trial}, ${mismatch.output}${at}${values}\n` +
    `  max abs ${formatError(mismatch.maxAbs)}, max rel ${formatError(mismatch.maxRel)}, ` +
    `norm rel ${formatError(mismatch.normRel)}, ${mismatch.nonFinite} non-finite`
  );
}

export function renderStatic(candidate: string, record: StaticRecord): string {
  if (record.ok && record.findings.length === 0)
    return `static check: ${candidate} (${record.format}) ok`;
  const verdict = record.ok ? "ok, with notes" : "REJECTED";
  const findings = record.findings.map((finding) => {
    const hack = finding.hack === null ? "" : ` (hack ${finding.hack})`;
    const line = finding.line === 0 ? "" : `line ${finding.line}: `;
    const note = finding.severity === "warn" ? "note: " : "";
    const text = finding.text.trim() === "" ? "" : `\n      ${finding.text.trim()}`;
    return `  - ${note}${line}${finding.code}${hack}: ${finding.message}${text}`;
  });
  return [`static check: ${candidate} (${record.format}) ${verdict}`, ...findings].join("\n");
}
