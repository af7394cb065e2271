// One line per candidate while `evokernel optimize` runs (stderr): where the budget stands,
// what became of the candidate, and the best so far.
import type { EngineEvent } from "../evolve/engine.js";
import type { Budget } from "../evolve/types.js";
import { formatRatio, formatSeconds } from "./format.js";

export function describeEngineEvent(event: EngineEvent, budget: Budget): string {
  if (event.type === "resumed") {
    const { spent } = event;
    return (
      `resuming: ${event.entries} archived (${spent.candidates}/${budget.candidates} candidates, ` +
      `${formatSeconds(spent.seconds)}, $${spent.usd.toFixed(2)})`
    );
  }
  if (event.type === "generation") {
    return `generation ${event.generation}: ${event.slots} proposal${event.slots === 1 ? "" : "s"}`;
  }
  const { entry, best, spent } = event;
  const width = String(budget.candidates).length;
  const where = `[${String(event.number).padStart(width)}/${budget.candidates}]`;
  const individual = entry.individual;
  const who = individual === null ? `c${event.number}` : individual.id;
  let what: string;
  if (individual === null) what = `no proposal: ${entry.failure?.reason ?? "failed"}`;
  else if (entry.duplicateOf !== null) what = `duplicate of ${entry.duplicateOf}`;
  else if (individual.evaluation.raced !== undefined) {
    const { raced } = individual.evaluation;
    what = `ok, raced out after ${raced.config} (≤ ${formatRatio(raced.speedupUpper)}, leader ≥ ${formatRatio(raced.leaderLower)})`;
  } else if (individual.evaluation.ok) what = `ok ${formatRatio(individual.evaluation.fitness)}`;
  else {
    const evaluation = individual.evaluation;
    what = `FAILED at ${evaluation.stage}: ${evaluation.reason ?? "failed"}`;
  }
  // a search over several GPUs: the lane that screened it
  const gpu = entry.duplicateOf === null ? individual?.evaluation.gpu : undefined;
  if (gpu !== undefined) what += ` on GPU ${gpu}`;
  const bestText = `best ${best.id} ${formatRatio(best.evaluation.fitness)}`;
  const cost = `$${spent.usd.toFixed(2)}`;
  return `${where} ${who} ${what} | ${bestText} | ${cost} | ${formatSeconds(spent.seconds)}`;
}
