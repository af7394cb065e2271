// The Dockerfiles against the repository they are built from (no Docker daemon here, so
// no image is built): every file a COPY takes from the build context exists and is not
// dropped by .dockerignore, every `npm run` they call is a script of package.json, and what
// they start is what `npm run bundle` writes. A file moved or a script renamed fails here
// instead of in an operator's build. The systemd unit and the compose file likewise: what
// they start exists, every variable they set is one the app reads (and docs/APP.md lists).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import picomatch from "picomatch";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";

const root = fileURLToPath(new URL("../..", import.meta.url));
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

/** Whether the app reads the variable: src/ names it (`env.NAME`), or Probot's settings do. */
const appSources = sourcesUnder(join(root, "src"));
function readByApp(name: string): boolean {
  return appSources.some((text) => text.includes(`env.${name}`));
}

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(path);
    return entry.name.endsWith(".ts") ? [readFileSync(path, "utf8")] : [];
  });
}

/** The settings an operator finds in docs/APP.md's table. */
const documented = readFileSync(join(root, "docs/APP.md"), "utf8");

/** The final stage of the app's image: its WORKDIR, VOLUME and ENV. */
function appImage(): { workdir: string; volume: string; env: Record<string, string> } {
  const lines = instructions("docker/app.Dockerfile");
  const from = lines.map((line) => line.startsWith("FROM ")).lastIndexOf(true);
  const last = lines.slice(from);
  const value = (keyword: string) =>
    [...last]
      .reverse()
      .find((line) => line.startsWith(`${keyword} `))
      ?.slice(keyword.length + 1) ?? "";
  const env = Object.fromEntries(
    last
      .filter((line) => line.startsWith("ENV "))
      .flatMap((line) => [...line.matchAll(/(\w+)=(\S+)/g)].map((m) => [m[1], m[2]])),
  ) as Record<string, string>;
  return { workdir: value("WORKDIR"), volume: value("VOLUME"), env };
}

describe("docker/evokernel.service (systemd)", () => {
  const text = readFileSync(join(root, "docker/evokernel.service"), "utf8");
  const settings = text
    .split("\n")
    .map((line) => /^#?(\w+)=(.*)$/.exec(line.trim()))
    .filter((match) => match !== null)
    .map((match) => ({ key: match[1] ?? "", value: match[2] ?? "" }));
  const value = (key: string) => settings.find((item) => item.key === key)?.value ?? "";
  const variables = settings
    .filter((item) => item.key === "Environment")
    .map((item) => /^(\w+)=(.*)$/.exec(item.value))
    .filter((match) => match !== null)
    .map((match) => ({ name: match[1] ?? "", value: match[2] ?? "" }));

  it("starts what `npm start` starts, from the checkout it works in", () => {
    const start = (
      JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
        scripts: { start: string };
      }
    ).scripts.start;
    const [node, script] = value("ExecStart").split(/\s+/);
    expect(node).toMatch(/\/node$/);
    const dir = value("WorkingDirectory");
    expect(script?.startsWith(`${dir}/`), `${script} is under ${dir}`).toBe(true);
    // The checkout's .env is read from the working directory: the script is run from there.
    expect(start).toBe(`node ${script?.slice(dir.length + 1)}`);
    // dist/src/app/main.js is what `npm run build` makes of src/app/main.ts.
    expect(existsSync(join(root, "src/app/main.ts"))).toBe(true);
  });

  it("sets only variables the app reads, each in docs/APP.md (commented ones too)", () => {
    expect(variables.map((item) => item.name)).toEqual(
      expect.arrayContaining(["NODE_ENV", "HOST", "PORT", "EVOKERNEL_LOCAL_REPO"]),
    );
    for (const { name } of variables) {
      expect(readByApp(name), `the app reads ${name}`).toBe(true);
      expect(documented, `docs/APP.md names ${name}`).toContain(`\`${name}`);
    }
  });

  it("keeps the local jobs' records in its state directory, which outlives a restart", () => {
    const state = variables.find((item) => item.name === "EVOKERNEL_LOCAL_STATE")?.value ?? "";
    expect(state.startsWith(`/var/lib/${value("StateDirectory")}/`)).toBe(true);
  });
});

describe("docker/docker-compose.yml", () => {
  const compose = parse(readFileSync(join(root, "docker/docker-compose.yml"), "utf8")) as {
    services: Record<
      string,
      {
        build: { context: string; dockerfile: string };
        ports: string[];
        volumes: string[];
        environment: Record<string, string>;
        healthcheck: { test: string[] };
      }
    >;
    volumes: Record<string, unknown>;
  };
  const service = compose.services.evokernel;
  const image = appImage();

  it("builds the app's image from the repository", () => {
    const context = join(root, "docker", service?.build.context ?? "");
    expect(context.replace(/\/$/, "")).toBe(root.replace(/\/$/, ""));
    expect(service?.build.dockerfile).toBe("docker/app.Dockerfile");
    expect(existsSync(join(context, service?.build.dockerfile ?? ""))).toBe(true);
  });

  it("keeps .env on a volume where the image works, and publishes the port it listens on", () => {
    const [volume, target] = (service?.volumes[0] ?? "").split(":");
    expect(Object.keys(compose.volumes)).toContain(volume);
    expect(target).toBe(image.workdir);
    expect(image.volume).toBe(image.workdir);
    expect(service?.ports.map((port) => port.split(":").at(-1))).toEqual([image.env.PORT]);
    expect(image.env.NODE_ENV).toBe("production");
  });

  it("sets only variables the app reads, each in docs/APP.md", () => {
    const names = Object.keys(service?.environment ?? {});
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      expect(readByApp(name), `the app reads ${name}`).toBe(true);
      expect(documented, `docs/APP.md names ${name}`).toContain(`\`${name}`);
    }
  });

  it("checks health at /ping, on the port the image listens on", () => {
    const probe = service?.healthcheck.test.join(" ") ?? "";
    const url = /http:\/\/[^'"\s]+/.exec(probe)?.[0] ?? "";
    expect(new URL(url).port).toBe(image.env.PORT);
    expect(new URL(url).pathname).toBe("/ping");
    expect(readFileSync(join(root, "src/app/server.ts"), "utf8")).toContain('path === "/ping"');
  });
});
