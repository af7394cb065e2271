// Arithmetic over dimension names ("N/2", "2*K+1", "5*M*N"), as task.json allows in shapes,
// randint bounds and the flops/bytes estimates. The grammar is the contract's
// (src/shared/contract/expressions.ts), which the harness reads too (exprs.py).
import { EXPRESSION_GRAMMAR as GRAMMAR } from "#shared/contract/expressions.js";

export type Expression = {
  readonly source: string;
  /** Dimension names the expression uses. */
  readonly names: readonly string[];
  evaluate(dims: Readonly<Record<string, number>>): number;
};

type Node =
  | { type: "number"; value: number }
  | { type: "name"; name: string }
  | { type: "negate"; operand: Node }
  | { type: "binary"; operator: string; left: Node; right: Node };

const OPERATORS = [...new Set([...GRAMMAR.binary.flat(), GRAMMAR.unary, GRAMMAR.power, "(", ")"])]
  .sort((a, b) => b.length - a.length) // ** before *, // before /
  .map((operator) => operator.replace(/[-+*/%()]/g, "\\$&"))
  .join("|");
const TOKEN = new RegExp(
  `${GRAMMAR.space}(?:(${GRAMMAR.number})|(${GRAMMAR.name})|(${OPERATORS}))`,
  "y",
);
const ONLY_SPACE = new RegExp(`^${GRAMMAR.space}$`);
const NUMBER = new RegExp(`^${GRAMMAR.number}$`);
const NAME = new RegExp(`^${GRAMMAR.name}$`);

export class ExpressionError extends Error {}

export function parseExpression(source: string): Expression {
  const tokens = tokenize(source);
  let at = 0;

  function peek(): string | undefined {
    return tokens[at];
  }
  function take(): string {
    const token = tokens[at++];
    if (token === undefined) throw new ExpressionError(`"${source}" ends too early`);
    return token;
  }
  function binaryLevel(operators: readonly string[], next: () => Node): Node {
    let left = next();
    for (let token = peek(); token !== undefined && operators.includes(token); token = peek()) {
      at++;
      left = { type: "binary", operator: token, left, right: next() };
    }
    return left;
  }
  /** The binary operators' levels, loosest first, then unary minus. */
  function level(index: number): Node {
    const operators = GRAMMAR.binary[index];
    if (operators === undefined) return unary();
    return binaryLevel(operators, () => level(index + 1));
  }
  function unary(): Node {
    if (peek() !== GRAMMAR.unary) return power();
    at++;
    return { type: "negate", operand: unary() };
  }
  function power(): Node {
    const base = atom();
    if (peek() !== GRAMMAR.power) return base;
    at++;
    return { type: "binary", operator: GRAMMAR.power, left: base, right: unary() };
  }
  function atom(): Node {
    const token = take();
    if (token === "(") {
      const inner = level(0);
      if (take() !== ")") throw new ExpressionError(`"${source}" is missing a ")"`);
      return inner;
    }
    if (NUMBER.test(token)) return { type: "number", value: Number(token) };
    if (NAME.test(token)) return { type: "name", name: token };
    throw new ExpressionError(`"${source}" has "${token}" where a number or name belongs`);
  }

  const tree = level(0);
  if (at < tokens.length) {
    throw new ExpressionError(`"${source}" has "${tokens[at]}" where the expression should end`);
  }
  return {
    source,
    names: [...new Set(namesIn(tree))],
    evaluate: (dims) => evaluateNode(tree, dims),
  };
}

function tokenize(source: string): string[] {
  const tokens: string[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < source.length) {
    const start = TOKEN.lastIndex;
    const match = TOKEN.exec(source);
    if (match === null) {
      if (ONLY_SPACE.test(source.slice(start))) break;
      throw new ExpressionError(
        `"${source}" has "${source.slice(start).trim()}" that is not arithmetic`,
      );
    }
    tokens.push(match[1] ?? match[2] ?? match[3] ?? "");
  }
  if (tokens.length === 0) throw new ExpressionError("an expression is empty");
  return tokens;
}

function namesIn(node: Node): string[] {
  if (node.type === "name") return [node.name];
  if (node.type === "negate") return namesIn(node.operand);
  if (node.type === "binary") return [...namesIn(node.left), ...namesIn(node.right)];
  return [];
}

function evaluateNode(node: Node, dims: Readonly<Record<string, number>>): number {
  if (node.type === "number") return node.value;
  if (node.type === "name") {
    const value = dims[node.name];
    if (value === undefined) throw new ExpressionError(`dimension "${node.name}" is not bound`);
    return value;
  }
  if (node.type === "negate") return -evaluateNode(node.operand, dims);
  return applyOperator(
    node.operator,
    evaluateNode(node.left, dims),
    evaluateNode(node.right, dims),
  );
}

function applyOperator(operator: string, left: number, right: number): number {
  if (operator === "+") return left + right;
  if (operator === "-") return left - right;
  if (operator === "*") return left * right;
  if (operator === "/") return left / right;
  // Python's meaning, since the harness evaluates the same text in Python.
  if (operator === "//") return Math.floor(left / right);
  if (operator === "%") return left - right * Math.floor(left / right);
  return left ** right;
}
