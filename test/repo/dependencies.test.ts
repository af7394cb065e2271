// Dependencies as declared: every direct dependency is imported by the code that ships, and
// the Node versions package.json's `engines` allows are ones every package of the lock
// allows (so `npm ci` warns of no EBADENGINE on them); the packages the app and the runner
// run with (not the dev tools) allow the range the bundles promise (the Action's check).
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { cliPackages } from "../../scripts/bundle.mjs";

const root = fileURLToPath(new URL("../..", import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  engines: { node: string };
  dependencies: Record<string, string>;
};
const lock = JSON.parse(readFileSync(join(root, "package-lock.json"), "utf8")) as {
  packages: Record<
    string,
    { engines?: { node?: string }; dev?: boolean; optional?: boolean; dependencies?: object }
  >;
};

type Version = [number, number, number];

function version(text: string): Version {
  const [major = 0, minor = 0, patch = 0] = text
    .replace(/^v/, "")
    .split(".")
    .map((part) => (/^\d+$/.test(part) ? Number(part) : 0));
  return [major, minor, patch];
}

function compare(a: Version, b: Version): number {
  return a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
}

/** One comparator of a node-semver range (>=, >, <, <=, =, ^, ~, x-ranges, bare majors). */
function satisfiesOne(v: Version, comparator: string): boolean {
  const match = /^(>=|<=|>|<|=|\^|~)?\s*(.*)$/.exec(comparator.trim());
  const op = match?.[1] ?? "";
  const text = match?.[2] ?? "";
  if (text === "*" || text === "x" || text === "") return true;
  const parts = text.split(".");
  const wild = parts.findIndex((part) => part === "*" || part === "x" || part === "X");
  const given = wild === -1 ? parts.length : wild;
  const low = version(text);
  if (op === "" || op === "=") {
    // 20, 20.x, 6.*: that major (and minor); a full version: exactly it.
    return low.slice(0, given).every((part, index) => v[index] === part);
  }
  if (op === ">=") return compare(v, low) >= 0;
  if (op === ">") return compare(v, low) > 0;
  if (op === "<") return compare(v, low) < 0;
  if (op === "<=") return compare(v, low) <= 0;
  if (op === "~") return compare(v, low) >= 0 && v[0] === low[0] && (given < 2 || v[1] === low[1]);
  // ^: the same major (for 0.x the same minor)
  return compare(v, low) >= 0 && v[0] === low[0] && (low[0] !== 0 || v[1] === low[1]);
}

export function satisfies(text: string, range: string): boolean {
  const v = version(text);
  return range.split("||").some((set) =>
    set
      .trim()
      .replace(/(>=|<=|>|<|=|\^|~)\s+/g, "$1")
      .split(/\s+/)
      .every((comparator) => satisfiesOne(v, comparator)),
  );
}

/** The lowest version of each `||` branch of a range like ours (`^20.19.0 || >=24`). */
function lowEnds(range: string): string[] {
  return range.split("||").map((branch) => {
    const low = /(\d+(?:\.\d+){0,2})/.exec(branch)?.[1] ?? "0";
    return version(low).join(".");
  });
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory())
      return ["node_modules", "dist", "harness", "corpus"].includes(entry.name)
        ? []
        : sourcesUnder(path);
    return /\.(ts|mts|mjs|js)$/.test(entry.name) ? [readFileSync(path, "utf8")] : [];
  });
}

describe("the range checker", () => {
  it("reads the ranges the lock holds as npm does", () => {
    expect(satisfies("20.18.1", "^20.19.0 || ^22.13.0 || >=24")).toBe(false);
    expect(satisfies("20.19.0", "^20.19.0 || ^22.13.0 || >=24")).toBe(true);
    expect(satisfies("23.4.0", "^20.19.0 || ^22.13.0 || >=24")).toBe(false);
    expect(satisfies("20.18.1", ">=22")).toBe(false);
    expect(satisfies("20.18.1", ">= 18")).toBe(true);
    expect(satisfies("20.19.0", ">=18.20.0 <20 || >=20.12.1")).toBe(true);
    expect(satisfies("20.5.0", ">=18.20.0 <20 || >=20.12.1")).toBe(false);
    expect(satisfies("22.0.0", "6.* || 8.* || >= 10.*")).toBe(true);
    expect(satisfies("20.0.0", "18 || 20 || >=22")).toBe(true);
    expect(satisfies("21.0.0", "18 || 20 || >=22")).toBe(false);
    expect(lowEnds("^20.19.0 || ^22.13.0 || >=24")).toEqual(["20.19.0", "22.13.0", "24.0.0"]);
  });
});

describe("dependencies", () => {
  it("every direct dependency is imported by the code that ships", () => {
    const code = [
      ...sourcesUnder(join(root, "src")),
      ...sourcesUnder(join(root, "runner", "src")),
      ...sourcesUnder(join(root, "bin")),
    ].join("\n");
    const unused = Object.keys(pkg.dependencies).filter(
      (name) => !new RegExp(`(?:from |import\\()\\s*["']${name}(?:/[^"']*)?["']`).test(code),
    );
    expect(unused).toEqual([]);
  });

  it("every package the lock installs allows each Node version engines allows", () => {
    const refused = lowEnds(pkg.engines.node).flatMap((node) =>
      Object.entries(lock.packages)
        .filter(([path, entry]) => path !== "" && entry.engines?.node !== undefined)
        .filter(([, entry]) => !satisfies(node, entry.engines?.node ?? "*"))
        .map(([path, entry]) => `${path} (${entry.engines?.node ?? ""}) refuses Node ${node}`),
    );
    expect(refused).toEqual([]);
  });

  // The Action runs the CLI's bundle (dist/evokernel.mjs) on the runner's Node; the app runs
  // from an install, under package.json's engines (the test above). A package only the app
  // holds (vega-lite's yargs, for its command line, which the chart rendering never loads)
  // does not bind the Action.
  it("the packages the CLI's bundle holds allow the range the Action promises", async () => {
    const action = readFileSync(join(root, "action", "action.yml"), "utf8");
    const promised = /evokernel supports \(([^)]+)\)/.exec(action)?.[1] ?? "";
    expect(promised).toBe("^20.18.1 or >= 22");
    const range = promised.replace(" or ", " || ");
    const bundled = new Set(await cliPackages());
    expect(bundled.has("node_modules/zod")).toBe(true);
    const refused = lowEnds(range).flatMap((node) =>
      Object.entries(lock.packages)
        .filter(([path, entry]) => bundled.has(path) && entry.dev !== true)
        .filter(([, entry]) => !satisfies(node, entry.engines?.node ?? "*"))
        .map(([path, entry]) => `${path} (${entry.engines?.node ?? ""}) refuses Node ${node}`),
    );
    expect(refused).toEqual([]);
  });
});
