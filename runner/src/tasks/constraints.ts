// The rules a combination of tunables must satisfy (task.json "constraints"): C-like integer
// expressions over the tunables' names, e.g. "THREADS_PER_ROW * ROWS_PER_BLOCK <= 1024". The
// tuner never proposes a combination that breaks one (it would only fail to build, or build a
// kernel the template does not mean). The language: integers, names, parentheses, unary
// - + !, * / % (integer division truncates toward zero, as in C), + -, < <= > >=, == !=,
// &&, ||; a comparison or a logical operator gives 1 or 0; a combination satisfies a rule
// when it evaluates to a non-zero value. lab/template-sweep.py reads the same language.
// Pure: text in, a checked predicate out.

export type Values = Readonly<Record<string, number | string | null>>;

export type Constraint = {
  text: string;
  /** The names it reads. */
  names: string[];
  /** True when `values` satisfies it; a name with no value (or a non-integer one) is unknown: true. */
  holds(values: Values): boolean;
};

type Node =
  | { kind: "num"; value: number }
  | { kind: "name"; name: string }
  | { kind: "unary"; op: string; arg: Node }
  | { kind: "binary"; op: string; left: Node; right: Node };

const TOKEN = /\s*(?:(\d+)|([A-Za-z_]\w*)|(&&|\|\||<=|>=|==|!=|[-+*/%<>!()]))/y;

// binding power of each binary operator, lowest first
const LEVELS: readonly (readonly string[])[] = [
  ["||"],
  ["&&"],
  ["==", "!="],
  ["<", "<=", ">", ">="],
  ["+", "-"],
  ["*", "/", "%"],
];

/** Parses one rule; throws an Error saying what is wrong and where. */
export function parseConstraint(text: string): Constraint {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  let at = 0;
  while (at < text.length) {
    if (/^\s*$/.test(text.slice(at))) break;
    TOKEN.lastIndex = at;
    const m = TOKEN.exec(text);
    if (m === null) throw new Error(`constraint "${text}": cannot read "${text.slice(at).trim()}"`);
    tokens.push(m[1] ?? m[2] ?? m[3] ?? "");
    at = TOKEN.lastIndex;
  }
  let i = 0;
  const peek = () => tokens[i];
  const fail = (what: string): never => {
    throw new Error(`constraint "${text}": ${what}`);
  };

  function primary(): Node {
    const t = tokens[i++];
    if (t === undefined) return fail("ends too early");
    if (/^\d+$/.test(t)) return { kind: "num", value: Number(t) };
    if (/^[A-Za-z_]\w*$/.test(t)) return { kind: "name", name: t };
    if (t === "(") {
      const inner = binary(0);
      if (tokens[i++] !== ")") fail("a ( is not closed");
      return inner;
    }
    if (t === "-" || t === "+" || t === "!") return { kind: "unary", op: t, arg: primary() };
    return fail(`unexpected "${t}"`);
  }

  function binary(level: number): Node {
    if (level >= LEVELS.length) return primary();
    let left = binary(level + 1);
    for (;;) {
      const op = peek();
      if (op === undefined || !LEVELS[level]?.includes(op)) return left;
      i++;
      left = { kind: "binary", op, left, right: binary(level + 1) };
    }
  }

  if (tokens.length === 0) fail("is empty");
  const tree = binary(0);
  if (i !== tokens.length) fail(`unexpected "${tokens[i]}"`);
  const names = [...new Set(collect(tree))];
  return {
    text,
    names,
    holds(values) {
      const known = names.every((name) => {
        const v = values[name];
        return typeof v === "number" || (typeof v === "string" && /^-?\d+$/.test(v));
      });
      if (!known) return true;
      const v = evaluate(tree, values);
      return Number.isFinite(v) && v !== 0; // a division by zero breaks the rule
    },
  };
}

function collect(node: Node): string[] {
  switch (node.kind) {
    case "num":
      return [];
    case "name":
      return [node.name];
    case "unary":
      return collect(node.arg);
    case "binary":
      return [...collect(node.left), ...collect(node.right)];
  }
}

function evaluate(node: Node, values: Values): number {
  switch (node.kind) {
    case "num":
      return node.value;
    case "name":
      return Number(values[node.name]);
    case "unary": {
      const v = evaluate(node.arg, values);
      return node.op === "-" ? -v : node.op === "!" ? Number(v === 0) : v;
    }
    case "binary": {
      const a = evaluate(node.left, values);
      if (node.op === "&&") return Number(a !== 0 && evaluate(node.right, values) !== 0);
      if (node.op === "||") return Number(a !== 0 || evaluate(node.right, values) !== 0);
      const b = evaluate(node.right, values);
      switch (node.op) {
        case "+":
          return a + b;
        case "-":
          return a - b;
        case "*":
          return a * b;
        case "/":
          return b === 0 ? NaN : Math.trunc(a / b);
        case "%":
          return b === 0 ? NaN : a % b;
        case "<":
          return Number(a < b);
        case "<=":
          return Number(a <= b);
        case ">":
          return Number(a > b);
        case ">=":
          return Number(a >= b);
        case "==":
          return Number(a === b);
        case "!=":
          return Number(a !== b);
      }
      return NaN;
    }
  }
}

/** Every rule, parsed; throws on the first that does not parse. */
export function parseConstraints(texts: readonly string[] = []): Constraint[] {
  return texts.map(parseConstraint);
}

/** True when `values` satisfies every rule. */
export function satisfies(constraints: readonly Constraint[], values: Values): boolean {
  return constraints.every((c) => c.holds(values));
}
