// What a person reads after `evokernel bench`: per configuration each implementation's time
// (median ± half the p20–p80 spread), the roofline floor, how close the candidate comes to
// it, and speedups over each reference point. Launch-bound configurations (the reference
// under 20 µs a call) are marked and left out of the headline speedup.
import type { BenchConfig, BenchRecord, Stat } from "#shared/contract/records.js";
import { formatMs, formatPercent, formatRatio, formatSeconds, formatStat } from "./format.js";
import { renderTable } from "./table.js";

export function renderBench(record: BenchRecord): string {
  const sections = [headline(record)];
  if (record.configs.length > 0) sections.push(timesTable(record.configs));
  if (!record.ok)
    sections.push(`not timed: ${record.reason ?? "error"}\n  ${record.message.trimEnd()}`);
  const refused = record.configs.filter((config) => config.reason !== null);
  if (refused.length > 0) {
    sections.push(refused.map((config) => `${config.name}: ${config.reason}`).join("\n"));
  }
  if (record.notes.length > 0) {
    sections.push(["notes:", ...record.notes.map((note) => `  - ${note}`)].join("\n"));
  }
  return sections.join("\n\n");
}

function headline(record: BenchRecord): string {
  const where =
    `${record.task} on ${record.device.name} (torch ${record.device.torch}, ` +
    `CUDA ${record.device.cuda ?? "none"}) in ${formatSeconds(record.seconds)}`;
  const { ceilings } = record;
  if (ceilings === null) return where;
  return (
    `${where}\nceilings: ${ceilings.bandwidthGBs.toFixed(0)} GB/s, ` +
    `${ceilings.fp32Tflops.toFixed(1)} fp32 TFLOP/s` +
    (ceilings.tf32x3Tflops === undefined
      ? ""
      : ` (${ceilings.tf32x3Tflops.toFixed(0)} fp32-accurate by 3xTF32)`) +
    `, ${ceilings.bf16Tflops.toFixed(0)} bf16 TFLOP/s`
  );
}

function timesTable(configs: readonly BenchConfig[]): string {
  const rows = configs.map(function timeRow(config) {
    // What the floor and the speedups describe: the candidate, else the baseline kernel.
    const subject = config.candidate ?? config.baseline;
    return [
      config.name + (config.launchBound ? " (launch-bound)" : ""),
      formatStat(config.eager),
      formatStat(config.compile),
      formatStat(config.baseline),
      formatStat(config.candidate),
      formatMs(config.floorMs),
      formatPercent(subject === null ? null : (config.floorMs / subject.medianMs) * 100),
      formatRatio(speedup(config.eager, subject)),
      formatRatio(speedup(config.compile, subject)),
      formatRatio(config.candidate === null ? null : speedup(config.baseline, config.candidate)),
    ];
  });
  return renderTable(
    [
      "config",
      "eager ms",
      "compile ms",
      "baseline ms",
      "candidate ms",
      "floor ms",
      "% of floor",
      "vs eager",
      "vs compile",
      "vs baseline",
    ],
    rows,
    ["left", ...Array<"right">(9).fill("right")],
  );
}

function speedup(reference: Stat | null, subject: Stat | null): number | null {
  if (reference === null || subject === null || subject.medianMs === 0) return null;
  return reference.medianMs / subject.medianMs;
}
