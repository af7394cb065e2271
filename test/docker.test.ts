// The Dockerfiles against the repository they are built from (no Docker daemon here, so
// no image is built): every file a COPY takes from the build context exists and is not
// dropped by .dockerignore, every `npm run` they call is a script of package.json, and what
// they start is what `npm run bundle` writes. A file moved or a script renamed fails here
// instead of in an operator's build.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const ignored = readFileSync(join(root, ".dockerignore"), "utf8")
  .split("\n")
  .map((line) => line.trim())
  .filter((line) => line !== "" && !line.startsWith("#"));
const isIgnored = picomatch(
  ignored.flatMap((pattern) => [pattern, `${pattern}/**`]),
  { dot: true },
);
const scripts = Object.keys(
  (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: object }).scripts,
);
const bundleScript = readFileSync(join(root, "scripts/bundle.mjs"), "utf8");

/** The instructions, continuation lines joined. */
function instructions(file: string): string[] {
  return readFileSync(join(root, file), "utf8")
    .replace(/\\\n/g, " ")
    .split("\n")
    .filter((line) => /^[A-Z]+\s/.test(line));
}

describe.each(["docker/app.Dockerfile", "docker/gpu-runner.Dockerfile"])("%s", (file) => {
  const lines = instructions(file);

  it("copies from the build context only files that are there and not ignored", () => {
    const sources = lines
      .filter((line) => line.startsWith("COPY ") && !line.includes("--from="))
      .flatMap((line) => line.split(/\s+/).slice(1, -1))
      .filter((word) => !word.startsWith("--"));
    expect(sources.length).toBeGreaterThan(0);
    for (const source of sources) {
      if (source === ".") continue;
      expect(existsSync(join(root, source)), `${source} exists`).toBe(true);
      expect(isIgnored(source), `${source} is not in .dockerignore`).toBe(false);
    }
  });

  it("runs npm scripts that exist and starts what the bundle writes", () => {
    for (const line of lines.filter((item) => item.startsWith("RUN "))) {
      for (const match of line.matchAll(/npm run ([\w:-]+)/g))
        expect(scripts, `npm run ${match[1]}`).toContain(match[1]);
    }
    const built = lines
      .filter((line) => line.startsWith("COPY --from=bundle "))
      .map((line) => line.split(/\s+/)[2]?.replace(/^\/src\//, ""));
    expect(built.length).toBeGreaterThan(0);
    for (const output of built) expect(bundleScript).toContain(`dist/${output?.split("/").pop()}`);
  });
});
