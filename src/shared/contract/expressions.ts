// task.json's arithmetic over dimension names ("N/2", "2*K+1", "5*M*N": shapes, randint
// bounds, the flops/bytes estimates), declared once: the runner parses it with this grammar
// (runner/src/tasks/expression.ts), the harness reads the same grammar from the generated
// expression-grammar.json (evokernel_harness/exprs.py), and both are held to
// EXPRESSION_CASES (test/shared/contract/contract.test.ts, runner/harness/tests/test_contract.py).

/**
 * Tokens (regular expressions both languages read alike: ASCII classes only) and operators.
 * `binary`: left-associative levels, loosest first; then unary minus; then `power`, which
 * binds right and tighter than a minus on its left (-2**2 is -4, 2**-1 is 0.5), as in Python.
 * Atoms: a number, a dimension name, or an expression in parentheses.
 */
export const EXPRESSION_GRAMMAR = {
  space: "[ \\t\\r\\n]*",
  number: "[0-9]+(?:\\.[0-9]+)?(?:e[+-]?[0-9]+)?",
  name: "[A-Za-z_][A-Za-z0-9_]*",
  binary: [
    ["+", "-"],
    ["*", "/", "//", "%"],
  ],
  unary: "-",
  power: "**",
} as const;

export type ExpressionCase =
  | { source: string; dims: Readonly<Record<string, number>>; value: number }
  | { source: string; dims: Readonly<Record<string, number>>; error: true };

/**
 * Expressions and what each gives (a value, or an error: refused when parsed or when
 * evaluated), in the runner and in the harness alike. `//` and `%` floor, as Python's do.
 */
export const EXPRESSION_CASES: readonly ExpressionCase[] = [
  { source: "4", dims: {}, value: 4 },
  { source: " 4 ", dims: {}, value: 4 },
  { source: "N", dims: { N: 3 }, value: 3 },
  { source: "N/2", dims: { N: 8 }, value: 4 },
  { source: "7/2", dims: {}, value: 3.5 },
  { source: "2*K+1", dims: { K: 5 }, value: 11 },
  { source: "5*M*N", dims: { M: 2, N: 3 }, value: 30 },
  { source: "N*(N+1)//2", dims: { N: 5 }, value: 15 },
  { source: "2+3*4", dims: {}, value: 14 },
  { source: "(2+3)*4", dims: {}, value: 20 },
  { source: "10-4-3", dims: {}, value: 3 },
  { source: "3 % 2 * 4", dims: {}, value: 4 },
  { source: "-7 // 2", dims: {}, value: -4 },
  { source: "-7 % 3", dims: {}, value: 2 },
  { source: "7 % -3", dims: {}, value: -2 },
  { source: "2**3**2", dims: {}, value: 512 },
  { source: "-2**2", dims: {}, value: -4 },
  { source: "(-2)**2", dims: {}, value: 4 },
  { source: "2**-1", dims: {}, value: 0.5 },
  { source: "2 ** -1 * 4", dims: {}, value: 2 },
  { source: "2*-3", dims: {}, value: -6 },
  { source: "2--3", dims: {}, value: 5 },
  { source: "--3", dims: {}, value: 3 },
  { source: "1e3", dims: {}, value: 1000 },
  { source: "1.5e-1*10", dims: {}, value: 1.5 },
  { source: "(4\n+1)", dims: {}, value: 5 },
  { source: "4\n+1", dims: {}, value: 5 },
  { source: "BLOCK_2*2", dims: { BLOCK_2: 16 }, value: 32 },
  { source: "", dims: {}, error: true },
  { source: "   ", dims: {}, error: true },
  { source: "2+", dims: {}, error: true },
  { source: "(2", dims: {}, error: true },
  { source: "2)", dims: {}, error: true },
  { source: "2)+(3", dims: {}, error: true },
  { source: "()", dims: {}, error: true },
  { source: "2 3", dims: {}, error: true },
  { source: "N M", dims: { N: 1, M: 2 }, error: true },
  { source: "2N", dims: { N: 1 }, error: true },
  { source: "+2", dims: {}, error: true },
  { source: "2^3", dims: {}, error: true },
  { source: "0x10", dims: {}, error: true },
  { source: "1_000", dims: {}, error: true },
  { source: ".5", dims: {}, error: true },
  { source: "1.", dims: {}, error: true },
  { source: "1E3", dims: {}, error: true },
  { source: "abs(N)", dims: { N: 1 }, error: true },
  { source: "N.real", dims: { N: 1 }, error: true },
  { source: "N[0]", dims: { N: 1 }, error: true },
  { source: "N if N else 1", dims: { N: 1 }, error: true },
  { source: "not N", dims: { N: 1 }, error: true },
  { source: "N and 1", dims: { N: 1 }, error: true },
  { source: "N < 2", dims: { N: 1 }, error: true },
  { source: "True", dims: {}, error: true },
  { source: "M", dims: { N: 1 }, error: true },
  { source: "'4'", dims: {}, error: true },
  { source: "4;5", dims: {}, error: true },
];
