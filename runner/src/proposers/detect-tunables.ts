// Finds the knobs of a CUDA source that the offline tuner may turn without touching the
// algorithm: macros the task declares ("tunables" in task.json), `#define NAME <int>`
// constants, `constexpr int kName = <int>` constants, literal block sizes in launches and
// `__launch_bounds__`, `#pragma unroll N`, and the minimum-blocks argument of
// `__launch_bounds__` (the in-source form of a register cap). Pure: source in, list out;
// `applyTunables` writes a choice back as -D values and source edits.

/** Where a tunable's value is written in the source (character offsets, end exclusive). */
export type Site = { start: number; end: number; line: number };

export type TunableKind =
  /** a macro guarded by #ifndef (or not in the source at all): set with -D */
  | "define"
  /** a macro defined without a guard: -D would not override it, so its value is edited */
  | "macro"
  | "constexpr"
  /** a literal block size in `<<<grid, 256>>>` (and `__launch_bounds__(256)` of that value) */
  | "launch-block"
  /** a literal `__launch_bounds__(N)` of no launch: only raised, never lowered */
  | "launch-bounds"
  | "unroll"
  /** `__launch_bounds__(X)` → `__launch_bounds__(X, N)`: caps registers so N blocks fit */
  | "min-blocks";

/** A value to try; null leaves the source as it is (no -D, no edit). */
export type TunableValue = number | string | null;

export type Tunable = {
  /** Stable name: the macro or constant, or `launch-block(256)`, `unroll(4)`, … */
  id: string;
  kind: TunableKind;
  /** What a person reads in a table or an insight. */
  label: string;
  /** The value in the source, or null where the source leaves it to -D or to an expression. */
  current: TunableValue;
  /** Values to try, the current one first among equals (always included). */
  values: TunableValue[];
  /** Declared by the task (its list is used as is), rather than found in the source. */
  declared: boolean;
  /** Where edits go (empty for "define"). */
  sites: Site[];
};

type Role = "block" | "unroll" | "generic" | "boolean";

const BLOCK_MIN = 32;
const BLOCK_MAX = 1024;
const UNROLL_VALUES = [1, 2, 4, 8, 16];
const MIN_BLOCKS_VALUES = [2, 4];

/** Names that read as performance knobs (for unguarded macros and constexpr constants). */
const KNOB_NAME =
  /block|thread|warp|tile|unroll|vec|stage|split|chunk|items|per_?(sm|thread|block|warp)|^k?[btw][mnk]$/i;
/** Names that read as meaning, not speed: changing them changes the result or the ABI. */
const SEMANTIC_NAME = /eps|ignore|index|seed|warp_?size|magic|bad|err|^k?lanes?$|version/i;
/** Names that are a whole block's thread count. */
const BLOCK_NAME = /^k?(block_?(size|dim|threads)|n?threads(_per_block)?|num_?threads)$/i;

/**
 * The tunables of `source`. `declared` is the task's "tunables" (macro name → values); those
 * come first, in the task's order, then what the source shows, in source order.
 */
export function detectTunables(
  source: string,
  declared: Readonly<Record<string, readonly (string | number)[]>> = {},
): Tunable[] {
  const code = maskComments(source);
  const lines = lineStarts(source);
  const at = (offset: number) => lineOf(lines, offset);
  const launches = findCalls(code, /<<</g, ">>>");
  const bounds = findCalls(code, /__launch_bounds__\s*\(/g, ")");
  const blockArgs = new Set<string>();
  for (const call of [...launches.map((c) => c.args[1]), ...bounds.map((c) => c.args[0])])
    if (call && /^[A-Za-z_]\w*$/.test(call.text)) blockArgs.add(call.text);
  const roleOf = (name: string, current: number): Role => {
    if (blockArgs.has(name) || (BLOCK_NAME.test(name) && current % 32 === 0)) return "block";
    if (/unroll/i.test(name)) return "unroll";
    return current === 0 || current === 1 ? "boolean" : "generic";
  };

  const out: Tunable[] = [];
  const taken = new Set<string>();
  const macros = findMacros(code);
  const constants = findConstexprs(code);

  for (const [name, list] of Object.entries(declared)) {
    const tunable = declaredTunable(name, list, code, macros, constants, at);
    if (tunable === null) continue;
    out.push(tunable);
    taken.add(name);
  }

  const found: { offset: number; tunable: Tunable }[] = [];
  for (const macro of macros) {
    if (taken.has(macro.name) || macro.literal === null || SEMANTIC_NAME.test(macro.name)) continue;
    const guarded = isGuarded(code, macro.name, macro.start);
    if (!guarded && !KNOB_NAME.test(macro.name)) continue;
    taken.add(macro.name);
    const values = candidates(roleOf(macro.name, macro.literal.value), macro.literal.value);
    const site = { ...macro.literal, line: at(macro.literal.start) };
    found.push({
      offset: macro.start,
      tunable: guarded
        ? tunable(macro.name, "define", `${macro.name} (-D)`, macro.literal.value, values, [])
        : tunable(macro.name, "macro", `${macro.name} (#define)`, macro.literal.value, values, [
            site,
          ]),
    });
  }
  for (const constant of constants) {
    if (taken.has(constant.name) || SEMANTIC_NAME.test(constant.name)) continue;
    if (!KNOB_NAME.test(constant.name)) continue;
    taken.add(constant.name);
    const values = candidates(roleOf(constant.name, constant.value), constant.value);
    found.push({
      offset: constant.start,
      tunable: tunable(
        constant.name,
        "constexpr",
        `${constant.name} (constexpr)`,
        constant.value,
        values,
        [{ start: constant.start, end: constant.end, line: at(constant.start) }],
      ),
    });
  }

  // Literal block sizes: every launch of one literal value and the __launch_bounds__ of the
  // same value move together, so a kernel is never launched with more threads than it allows.
  const literalSites = new Map<number, Site[]>();
  const addLiteral = (arg: Arg | undefined) => {
    if (!arg || !/^\d+$/.test(arg.text)) return false;
    const value = Number(arg.text);
    const list = literalSites.get(value) ?? [];
    list.push({ start: arg.start, end: arg.end, line: at(arg.start) });
    literalSites.set(value, list);
    return true;
  };
  for (const launch of launches) addLiteral(launch.args[1]);
  const launchValues = new Set(literalSites.keys());
  const boundsOnly = new Map<number, Site[]>();
  for (const bound of bounds) {
    const arg = bound.args[0];
    if (!arg || !/^\d+$/.test(arg.text)) continue;
    if (launchValues.has(Number(arg.text))) addLiteral(arg);
    else {
      const list = boundsOnly.get(Number(arg.text)) ?? [];
      list.push({ start: arg.start, end: arg.end, line: at(arg.start) });
      boundsOnly.set(Number(arg.text), list);
    }
  }
  for (const [value, sites] of literalSites) {
    const count = sites.length === 1 ? "1 place" : `${sites.length} places`;
    found.push({
      offset: sites[0]?.start ?? 0,
      tunable: tunable(
        `launch-block(${value})`,
        "launch-block",
        `block size ${value} (literal, ${count})`,
        value,
        candidates("block", value),
        sites,
      ),
    });
  }
  for (const [value, sites] of boundsOnly) {
    // Lowering the bound below the launched block size fails every launch: only raise it.
    const values = candidates("block", value).filter((v) => typeof v === "number" && v >= value);
    found.push({
      offset: sites[0]?.start ?? 0,
      tunable: tunable(
        `launch-bounds(${value})`,
        "launch-bounds",
        `__launch_bounds__(${value}) (literal)`,
        value,
        values,
        sites,
      ),
    });
  }

  const unrolls = new Map<number, Site[]>();
  for (const match of code.matchAll(/#[ \t]*pragma[ \t]+unroll[ \t]*\(?[ \t]*(\d+)[ \t]*\)?/dg)) {
    const span = match.indices?.[1];
    if (!span) continue;
    const value = Number(match[1]);
    const list = unrolls.get(value) ?? [];
    list.push({ start: span[0], end: span[1], line: at(span[0]) });
    unrolls.set(value, list);
  }
  for (const [value, sites] of unrolls) {
    const loops = sites.length === 1 ? "1 loop" : `${sites.length} loops`;
    found.push({
      offset: sites[0]?.start ?? 0,
      tunable: tunable(
        `unroll(${value})`,
        "unroll",
        `#pragma unroll ${value} (${loops})`,
        value,
        candidates("unroll", value),
        sites,
      ),
    });
  }

  const single = bounds.filter((bound) => bound.args.length === 1);
  if (single.length > 0) {
    const sites = single.map((bound) => ({
      start: bound.end,
      end: bound.end,
      line: at(bound.end),
    }));
    found.push({
      offset: sites[0]?.start ?? 0,
      tunable: tunable(
        "min-blocks",
        "min-blocks",
        "__launch_bounds__ min blocks per SM (register cap)",
        null,
        [null, ...MIN_BLOCKS_VALUES],
        sites,
      ),
    });
  }

  found.sort((a, b) => a.offset - b.offset);
  return [...out, ...found.map((f) => f.tunable)].filter((t) => t.values.length > 1);
}

/** The -D values and the edited source for one value per tunable (`choice[i]` for `tunables[i]`). */
export function applyTunables(
  source: string,
  tunables: readonly Tunable[],
  choice: readonly TunableValue[],
): { source: string; defines: Record<string, string> } {
  const defines: Record<string, string> = {};
  const edits: { start: number; end: number; text: string }[] = [];
  tunables.forEach((t, i) => {
    const value = choice[i] ?? null;
    if (value === null || value === t.current) return;
    if (t.kind === "define") {
      defines[t.id] = String(value);
      return;
    }
    const text = t.kind === "min-blocks" ? `, ${value}` : String(value);
    for (const site of t.sites) edits.push({ start: site.start, end: site.end, text });
  });
  edits.sort((a, b) => b.start - a.start);
  let out = source;
  for (const edit of edits) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return { source: out, defines };
}

/** Candidate values around `current`: powers of two, within bounds that suit the role. */
function candidates(role: Role, current: number): number[] {
  let values: number[];
  if (role === "unroll") values = UNROLL_VALUES;
  else if (role === "boolean") values = [0, 1];
  else {
    const [lo, hi] =
      role === "block"
        ? [Math.max(BLOCK_MIN, current / 4), Math.min(BLOCK_MAX, current * 4)]
        : [Math.max(1, current / 2), current * 2];
    values = [];
    for (let v = 1; v <= hi; v *= 2) if (v >= lo) values.push(v);
  }
  return [current, ...values.filter((v) => v !== current)].sort((a, b) => a - b);
}

function tunable(
  id: string,
  kind: TunableKind,
  label: string,
  current: TunableValue,
  values: TunableValue[],
  sites: Site[],
  declared = false,
): Tunable {
  return { id, kind, label, current, values, declared, sites };
}

type Macro = {
  name: string;
  start: number;
  /** The value text (the whole expression after the name). */
  value: { start: number; end: number };
  literal: { start: number; end: number; value: number } | null;
};

function findMacros(code: string): Macro[] {
  const out: Macro[] = [];
  for (const m of code.matchAll(
    /^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+([^\n]*?)[ \t]*$/dgm,
  )) {
    const name = m[1];
    const span = m.indices?.[2];
    if (name === undefined || !span || span[0] === span[1]) continue;
    const text = code.slice(span[0], span[1]);
    const lit = /^\(?\s*(\d+)[uUlL]*\s*\)?$/.exec(text);
    let literal: Macro["literal"] = null;
    if (lit?.[1] !== undefined) {
      const start = span[0] + text.indexOf(lit[1]);
      literal = { start, end: start + lit[1].length, value: Number(lit[1]) };
    }
    if (out.some((macro) => macro.name === name)) continue; // the first definition only
    out.push({ name, start: m.index, value: { start: span[0], end: span[1] }, literal });
  }
  return out;
}

type Constant = { name: string; start: number; end: number; value: number };

function findConstexprs(code: string): Constant[] {
  const out: Constant[] = [];
  const re =
    /\bconstexpr\s+(?:(?:unsigned|signed|const|static)\s+)*(?:int|long|short|unsigned|size_t|u?int(?:32|64)_t)\s+([A-Za-z_]\w*)\s*=\s*(\d+)[uUlL]*\s*;/dg;
  for (const m of code.matchAll(re)) {
    const span = m.indices?.[2];
    if (m[1] === undefined || !span) continue;
    out.push({ name: m[1], start: span[0], end: span[1], value: Number(m[2]) });
  }
  return out;
}

function declaredTunable(
  name: string,
  list: readonly (string | number)[],
  code: string,
  macros: Macro[],
  constants: Constant[],
  at: (offset: number) => number,
): Tunable | null {
  if (list.length === 0) return null;
  const macro = macros.find((m) => m.name === name);
  const constant = constants.find((c) => c.name === name);
  const withCurrent = (current: TunableValue) =>
    list.some((v) => v === current || String(v) === String(current))
      ? [...list]
      : [current, ...list];
  if (macro !== undefined && !isGuarded(code, name, macro.start)) {
    // -D would lose to the source's own #define: edit the value instead.
    const span = macro.literal ?? macro.value;
    const current = macro.literal?.value ?? code.slice(span.start, span.end);
    const site = { start: span.start, end: span.end, line: at(span.start) };
    return tunable(name, "macro", `${name} (#define)`, current, withCurrent(current), [site], true);
  }
  if (macro === undefined && constant !== undefined) {
    const site = { start: constant.start, end: constant.end, line: at(constant.start) };
    const current = constant.value;
    return tunable(
      name,
      "constexpr",
      `${name} (constexpr)`,
      current,
      withCurrent(current),
      [site],
      true,
    );
  }
  // Guarded, or not in the source at all: -D. With no literal default, null means "as written".
  const current = macro?.literal?.value ?? null;
  return tunable(name, "define", `${name} (-D)`, current, withCurrent(current), [], true);
}

/** True when `#ifndef NAME` (or `#if !defined(NAME)`) opens before `offset` and is still open. */
function isGuarded(code: string, name: string, offset: number): boolean {
  const before = code.slice(0, offset);
  const guard = new RegExp(
    `#[ \\t]*(?:ifndef[ \\t]+${name}\\b|if[ \\t]+!\\s*defined\\s*\\(?\\s*${name}\\b)`,
    "g",
  );
  let last = -1;
  for (const m of before.matchAll(guard)) last = m.index;
  if (last < 0) return false;
  return !/#[ \t]*endif\b/.test(before.slice(last));
}

type Arg = { text: string; start: number; end: number };
type Call = { args: Arg[]; end: number };

/**
 * Calls opened by `open` and closed by `close` at depth zero: `<<<a, b>>>` and
 * `__launch_bounds__(a, b)`. Arguments are split on top-level commas; `end` is the offset of
 * the closing token.
 */
function findCalls(code: string, open: RegExp, close: string): Call[] {
  const out: Call[] = [];
  for (const m of code.matchAll(open)) {
    let i = m.index + m[0].length;
    let depth = 0;
    let argStart = i;
    const args: Arg[] = [];
    const push = (end: number) => {
      const raw = code.slice(argStart, end);
      const lead = raw.length - raw.trimStart().length;
      const text = raw.trim();
      if (text !== "")
        args.push({ text, start: argStart + lead, end: argStart + lead + text.length });
    };
    for (; i < code.length; i++) {
      if (depth === 0 && code.startsWith(close, i)) break;
      const c = code[i];
      if (c === "(" || c === "[" || c === "{") depth++;
      else if (c === ")" || c === "]" || c === "}") depth--;
      else if (c === "," && depth === 0) {
        push(i);
        argStart = i + 1;
      }
      if (depth < 0) break;
    }
    if (i >= code.length || depth < 0) continue;
    push(i);
    // The insertion point for a second argument sits right after the last one's text.
    const last = args.at(-1);
    out.push({ args, end: last ? last.end : i });
  }
  return out;
}

/** The source with comments and string contents blanked out; offsets and newlines kept. */
export function maskComments(source: string): string {
  let out = "";
  let i = 0;
  while (i < source.length) {
    const two = source.slice(i, i + 2);
    if (two === "//") {
      const end = source.indexOf("\n", i);
      const stop = end < 0 ? source.length : end;
      out += " ".repeat(stop - i);
      i = stop;
    } else if (two === "/*") {
      const end = source.indexOf("*/", i + 2);
      const stop = end < 0 ? source.length : end + 2;
      out += source.slice(i, stop).replace(/[^\n]/g, " ");
      i = stop;
    } else if (source[i] === '"' || source[i] === "'") {
      const quote = source[i];
      let j = i + 1;
      while (j < source.length && source[j] !== quote && source[j] !== "\n")
        j += source[j] === "\\" ? 2 : 1;
      const stop = Math.min(j + 1, source.length);
      out +=
        quote + " ".repeat(Math.max(0, stop - i - 2)) + (stop - i >= 2 ? source[stop - 1] : "");
      i = stop;
    } else {
      out += source[i];
      i++;
    }
  }
  return out;
}

function lineStarts(source: string): number[] {
  const starts = [0];
  for (let i = 0; i < source.length; i++) if (source[i] === "\n") starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if ((starts[mid] ?? 0) <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo + 1;
}
