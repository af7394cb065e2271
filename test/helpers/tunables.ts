// A tuned kernel for the compile tests: every tunable one step from its current value (down
// where it can, else up), each step kept only where the task's constraints still hold, as the
// tuner only proposes combinations that keep them (a template may refuse the others with a
// static_assert: gemm_bias_relu's STAGES 3 and 4 take SPLIT 0).
import { parseConstraints, satisfies } from "../../runner/src/tasks/constraints.js";
import type { Tunable, TunableValue } from "../../runner/src/proposers/detect-tunables.js";

export function stepWithinConstraints(
  tunables: readonly Tunable[],
  constraints: readonly string[] = [],
): TunableValue[] {
  const rules = parseConstraints(constraints);
  const chosen = tunables.map((t) => t.current);
  const values = () => Object.fromEntries(tunables.map((t, i) => [t.id, chosen[i] ?? null]));
  tunables.forEach((t, i) => {
    const at = t.values.indexOf(t.current);
    const step = t.values[at > 0 ? at - 1 : at + 1] ?? t.current;
    const before = chosen[i] ?? null;
    chosen[i] = step;
    if (!satisfies(rules, values())) chosen[i] = before;
  });
  return chosen.map((v) => v ?? null);
}
