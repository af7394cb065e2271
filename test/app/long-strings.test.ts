// The webhook body's long-string filter (src/app/long-strings.ts): strings past the limit are
// emptied wherever the chunks split the body (inside an escape, at a quote), everything else
// passes byte for byte.
import { describe, expect, it } from "vitest";
import { createLongStringFilter } from "../../src/app/long-strings.js";

function filter(body: Buffer, limit: number, chunk: number): { out: Buffer; emptied: number } {
  const f = createLongStringFilter(limit);
  for (let at = 0; at < body.length; at += chunk) f.push(body.subarray(at, at + chunk));
  return { out: f.result(), emptied: f.emptied };
}

/** What the filter should make of `value`: strings (keys too) longer than `limit` escaped bytes emptied. */
function emptied(value: unknown, limit: number): unknown {
  const long = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2 > limit;
  if (typeof value === "string") return long(value) ? "" : value;
  if (Array.isArray(value)) return value.map((item) => emptied(item, limit));
  if (typeof value === "object" && value !== null)
    return Object.fromEntries(
      Object.entries(value).map(([key, item]) => [long(key) ? "" : key, emptied(item, limit)]),
    );
  return value;
}

const payload = {
  action: "opened",
  number: 7,
  pull_request: {
    title: 'a "quoted" title \\ with a backslash',
    body: `pasted log: ${'line "one" \\ two\n\t'.repeat(40)} é ✓ \u0001 end`,
    head: { sha: "a".repeat(40), ref: "feature" },
    labels: ["x".repeat(30), "short", 'esc\\"aped'.repeat(5)],
    draft: false,
    merged_by: null,
  },
  ["k".repeat(40)]: "a long key's value",
  installation: { id: 1 },
};
const body = Buffer.from(JSON.stringify(payload));

describe("createLongStringFilter", () => {
  it("passes a body without long strings byte for byte, however it is split", () => {
    for (const chunk of [1, 2, 3, 7, 64, body.length]) {
      const { out, emptied: count } = filter(body, 10_000, chunk);
      expect(out.equals(body)).toBe(true);
      expect(count).toBe(0);
    }
  });

  it("empties every string past the limit, keys included, at any split", () => {
    for (const limit of [16, 30, 33, 200]) {
      const expected = emptied(payload, limit);
      for (let chunk = 1; chunk <= 97; chunk += 6) {
        const { out, emptied: count } = filter(body, limit, chunk);
        expect(JSON.parse(out.toString())).toEqual(expected);
        expect(count).toBeGreaterThan(0);
      }
    }
    // Exactly at the limit is kept, one byte past it is not.
    const exact = Buffer.from(JSON.stringify({ a: "x".repeat(8), b: "y".repeat(9) }));
    expect(JSON.parse(filter(exact, 8, 3).out.toString())).toEqual({ a: "x".repeat(8), b: "" });
  });

  it("keeps bytes, not megabytes, of a 64 MB string", () => {
    const f = createLongStringFilter(1024);
    f.push(Buffer.from('{"body":"'));
    for (let i = 0; i < 1000; i++) f.push(Buffer.alloc(64 * 1024, 0x78));
    f.push(Buffer.from('","n":1}'));
    const out = f.result();
    expect(JSON.parse(out.toString())).toEqual({ body: "", n: 1 });
    expect(out.length).toBeLessThan(64);
  });
});
