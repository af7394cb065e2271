// The app's requests against GitHub's published API description (@octokit/openapi), for
// github.com and each GHES release it describes. Every method of the one GitHub interface
// (src/app/github.ts) is called through the app's own Octokit, whose request hook checks
// each request and answers with the description's own example: the operation exists for
// that method and path, every query parameter and body key is one the operation documents
// (GHES refuses keys it does not know), enums hold, required keys are there, and refs are
// read and moved only under heads/ and tags/, the namespaces GitHub documents.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { afterAll, describe, expect, it } from "vitest";
import { createGitHub, type GitHub } from "../../src/app/github.js";
import { evokernelOctokit } from "../../src/app/octokit.js";
import { forgetServerFeatures } from "../../src/app/server-features.js";
import { readAppYml } from "../../src/app/setup/manifest.js";

type Json = Record<string, unknown>;

const require = createRequire(import.meta.url);
const generated = require.resolve("@octokit/openapi/generated/api.github.com.json");

function description(name: string): Json {
  return JSON.parse(readFileSync(generated.replace("api.github.com", name), "utf8")) as Json;
}

/** `#/components/…` pointers resolved (the non-dereferenced files are a tenth the size). */
function resolver(doc: Json) {
  return function resolve(node: unknown): Json {
    let current = node as Json;
    for (let depth = 0; depth < 20 && typeof current?.$ref === "string"; depth++) {
      current = current.$ref
        .slice(2)
        .split("/")
        .reduce<Json>((value, key) => value[key] as Json, doc);
    }
    return current;
  };
}

/** Properties of an object schema, through allOf/oneOf/anyOf. */
function propertiesOf(schema: Json, resolve: (node: unknown) => Json): Map<string, Json> {
  const found = new Map<string, Json>();
  const visit = (node: unknown): void => {
    const resolved = resolve(node);
    for (const [key, value] of Object.entries((resolved.properties as Json | undefined) ?? {})) {
      // A key in several branches (anyOf: status queued/in_progress, or completed with a
      // conclusion) takes the union of their enums; a branch without one allows any value.
      const next = resolve(value);
      const seen = found.get(key);
      if (seen === undefined) found.set(key, next);
      else if (Array.isArray(seen.enum) && Array.isArray(next.enum))
        found.set(key, {
          ...seen,
          enum: [...(seen.enum as unknown[]), ...(next.enum as unknown[])],
        });
      else found.set(key, { ...seen, enum: undefined });
    }
    for (const list of ["allOf", "oneOf", "anyOf"])
      for (const part of (resolved[list] as unknown[] | undefined) ?? []) visit(part);
  };
  visit(schema);
  return found;
}

/** The description's path template a concrete URL matches. */
function templateOf(doc: Json, url: string): string {
  const path = new URL(url).pathname.replace(/^\/api\/v3/, "");
  const found = Object.keys(doc.paths as Json).find((template) =>
    new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path),
  );
  return found ?? path;
}

interface Recorded {
  method: string;
  template: string;
  problems: string[];
  /** The operation's x-github category/subcategory: what permission it needs. */
  category?: string;
}

const SHA = "a".repeat(40);
const DOC_REF = /^(heads|tags)\//;

function checkRequest(
  doc: Json,
  options: { method: string; url: string; [key: string]: unknown },
  parsed: { url: string; body?: unknown },
): { recorded: Recorded; response: { status: number; data: unknown } } {
  const resolve = resolver(doc);
  // Later pages of a listing come as full URLs: their path names the template.
  const template = options.url.startsWith("http") ? templateOf(doc, options.url) : options.url;
  const method = options.method.toLowerCase();
  const problems: string[] = [];
  const recorded: Recorded = { method: options.method, template, problems };
  const operation = ((doc.paths as Json)[template] as Json | undefined)?.[method] as
    Json | undefined;
  if (operation === undefined) {
    problems.push("no such operation");
    return { recorded, response: { status: 404, data: { message: "Not Found" } } };
  }
  const github = operation["x-github"] as { category?: string; subcategory?: string } | undefined;
  Object.assign(recorded, { category: `${github?.category}/${github?.subcategory}` });
  const parameters = ((operation.parameters as unknown[] | undefined) ?? []).map(resolve);
  const query = new URL(parsed.url).searchParams;
  for (const key of query.keys()) {
    if (!parameters.some((parameter) => parameter.in === "query" && parameter.name === key))
      problems.push(`query parameter '${key}' is not documented`);
  }
  const body =
    parsed.body === undefined || parsed.body === null
      ? undefined
      : typeof parsed.body === "string"
        ? (JSON.parse(parsed.body) as Json)
        : (parsed.body as Json);
  if (body !== undefined) {
    const content = (resolve(operation.requestBody).content as Json | undefined)?.[
      "application/json"
    ] as Json | undefined;
    if (content === undefined) problems.push("sends a body the operation does not take");
    else {
      const schema = resolve(content.schema);
      const properties = propertiesOf(schema, resolve);
      for (const [key, value] of Object.entries(body)) {
        const property = properties.get(key);
        if (property === undefined) {
          if (schema.additionalProperties !== true)
            problems.push(`body key '${key}' is not documented`);
          continue;
        }
        const allowed = property.enum as unknown[] | undefined;
        if (allowed !== undefined && !allowed.includes(value))
          problems.push(
            `body '${key}': ${JSON.stringify(value)} is not one of ${JSON.stringify(allowed)}`,
          );
      }
      for (const key of (schema.required as string[] | undefined) ?? [])
        if (!(key in body)) problems.push(`body lacks the required '${key}'`);
    }
  }
  // Refs: GitHub documents reading and moving refs under heads/ and tags/ only.
  if (/\/git\/refs?\/\{ref\}$/.test(template) && !DOC_REF.test(String(options.ref)))
    problems.push(`ref '${String(options.ref)}' is outside heads/ and tags/`);
  if (
    template.endsWith("/git/refs") &&
    method === "post" &&
    !/^refs\/(heads|tags)\//.test(String(body?.ref))
  )
    problems.push(`creates '${String(body?.ref)}', outside refs/heads/ and refs/tags/`);

  const responses = operation.responses as Json;
  const status = Object.keys(responses)
    .filter((code) => /^[23]\d\d$/.test(code))
    .sort()[0];
  const answer = resolve(responses[status ?? "200"]);
  const media = (answer.content as Json | undefined)?.["application/json"] as Json | undefined;
  const examples = media?.examples as Json | undefined;
  const first = examples === undefined ? undefined : resolve(Object.values(examples)[0]);
  const data = first?.value ?? media?.example;
  return { recorded, response: { status: Number(status ?? 200), data } };
}

/** The app's Octokit on `baseUrl`, answering every request from `doc` and recording it. */
function gitHubOn(doc: Json, baseUrl: string, log: Recorded[]): GitHub {
  const Octokit = evokernelOctokit({ throttle: false, retry: false });
  const octokit = new Octokit({ auth: "test", baseUrl });
  octokit.hook.wrap("request", (_request, options) => {
    const endpoint = octokit.request.endpoint(options as never) as { url: string; body?: unknown };
    const { recorded, response } = checkRequest(doc, options, endpoint);
    log.push(recorded);
    if (response.status >= 400)
      return Promise.reject(
        Object.assign(new Error(`${response.status}`), { status: response.status }),
      );
    return Promise.resolve({
      status: response.status,
      url: endpoint.url,
      headers: {},
      data: response.data,
    });
  });
  return createGitHub(octokit, { owner: "octo", repo: "kernels" });
}

/** Every method of the GitHub interface, with arguments as the app passes them. */
const CALLS: [string, (github: GitHub) => Promise<unknown>][] = [
  ["getPull", (g) => g.getPull(7)],
  ["listPullFiles", (g) => g.listPullFiles(7)],
  ["permissionOf", (g) => g.permissionOf("octocat")],
  ["addReaction", (g) => g.addReaction(1, "rocket")],
  ["createComment", (g) => g.createComment(7, "hello")],
  ["upsertComment", (g) => g.upsertComment(7, "<!-- evokernel -->", "hello")],
  [
    "createCheckRun",
    (g) =>
      g.createCheckRun("evokernel", SHA, {
        status: "in_progress",
        externalId: "review-7-aaaaaaa-000000@1",
        detailsUrl: "https://github.com/octo/kernels/actions/runs/1",
        output: { title: "t", summary: "± × µs", text: "text" },
      }),
  ],
  [
    "updateCheckRun",
    (g) =>
      g.updateCheckRun(1, {
        status: "completed",
        conclusion: "success",
        output: { title: "t", summary: "s" },
        actions: [{ label: "Apply", description: "Apply the kernel", identifier: "evk-apply" }],
      }),
  ],
  ["getCheckRun", (g) => g.getCheckRun(1)],
  ["listCheckRuns", (g) => g.listCheckRuns(SHA)],
  [
    "listCheckRuns (one name, every run: a job's claim)",
    (g) => g.listCheckRuns(SHA, { checkName: "evokernel bench", appId: 1 }),
  ],
  [
    "updateCheckRun (a twin stands down)",
    (g) =>
      g.updateCheckRun(1, {
        name: "evokernel (duplicate)",
        status: "completed",
        conclusion: "skipped",
        output: { title: "t", summary: "s" },
      }),
  ],
  ["dispatchWorkflow", (g) => g.dispatchWorkflow("evokernel.yml", "main", { spec: "{}" })],
  ["findDispatchedRun", (g) => g.findDispatchedRun("evokernel.yml", "review-7", new Date())],
  ["cancelWorkflowRun", (g) => g.cancelWorkflowRun(1)],
  ["downloadArtifact", (g) => g.downloadArtifact(1, "evokernel-result", 1_000_000)],
  [
    "createReview",
    (g) =>
      g.createReview(7, SHA, "review", [
        { path: "k.cu", body: "b", line: 3, side: "RIGHT", start_line: 2, start_side: "RIGHT" },
      ]),
  ],
  [
    "commitFiles",
    (g) => g.commitFiles("evokernel/7-aaaaaaa", SHA, [{ path: "k.cu", content: "x" }], "m"),
  ],
  ["readTree", (g) => g.readTree(SHA)],
  ["readBlob", (g) => g.readBlob(SHA)],
  ["resolveCommit", (g) => g.resolveCommit("aaaaaaa")],
  ["listPullCommits", (g) => g.listPullCommits(7)],
  ["branchHead", (g) => g.branchHead("main")],
  ["fastForward", (g) => g.fastForward("faster-softmax", SHA)],
  ["createPull", (g) => g.createPull("evokernel/7-aaaaaaa", "faster-softmax", "t", "b")],
  ["defaultBranch", (g) => g.defaultBranch()],
  ["readConfig", (g) => g.readConfig()],
  ["readBranchFile", (g) => g.readBranchFile("evokernel-state", "nightly.json")],
  [
    "writeBranchFiles (new)",
    (g) =>
      g.writeBranchFiles(
        "evokernel-state",
        undefined,
        [{ path: "nightly.json", content: "{}" }],
        "m",
      ),
  ],
  [
    "writeBranchFiles (on a parent)",
    (g) =>
      g.writeBranchFiles(
        "evokernel-state",
        SHA,
        [
          { path: "nightly.json", content: "{}" },
          { path: "sources/abc", sha: SHA },
        ],
        "m",
      ),
  ],
  ["listPullsByHead", (g) => g.listPullsByHead("evokernel/nightly")],
  ["listOpenPullHeads", (g) => g.listOpenPullHeads(10)],
  ["openPull", (g) => g.openPull("evokernel/nightly", "main", "t", "b")],
  ["updatePull", (g) => g.updatePull(40, "t", "b")],
  ["upsertIssue", (g) => g.upsertIssue("<!-- drift -->", "evokernel", "t", "b")],
];

const SERVERS: [string, string][] = [
  ["api.github.com", "https://api.github.com"],
  ["ghes-3.17", "https://ghe.example.test/api/v3"],
  ["ghes-3.18", "https://ghe.example.test/api/v3"],
  ["ghes-3.19", "https://ghe.example.test/api/v3"],
];

const summary: string[] = [];
/** github.com's requests, for the permissions they need. */
const dotcom: Recorded[] = [];

/**
 * The App permission each API category needs (GitHub's "Permissions required for GitHub
 * Apps"): a GET needs read, anything else write. The meta endpoint needs none.
 */
function permissionFor(category: string): string | undefined {
  const [group, sub] = category.split("/");
  if (group === "meta") return undefined;
  if (group === "repos") return sub === "contents" || sub === "branches" ? "contents" : "metadata";
  const byGroup: Record<string, string> = {
    checks: "checks",
    pulls: "pull_requests",
    issues: "issues",
    reactions: "issues",
    actions: "actions",
    git: "contents",
    commits: "contents",
    collaborators: "metadata",
  };
  const permission = group === undefined ? undefined : byGroup[group];
  if (permission === undefined) throw new Error(`no permission known for ${category}`);
  return permission;
}

afterAll(() => {
  console.info(summary.join("\n"));
});

describe.each(SERVERS)("requests against %s's API description", (name, baseUrl) => {
  it("are documented operations with documented parameters, keys and refs", async () => {
    forgetServerFeatures();
    const doc = description(name);
    const log: Recorded[] = [];
    const github = gitHubOn(doc, baseUrl, log);
    const unreadable: string[] = [];
    for (const [label, call] of CALLS) {
      try {
        await call(github);
      } catch (error) {
        // The description's example did not satisfy our parser: noted, not a request fault.
        const cause = (error as Error).cause as Error | undefined;
        unreadable.push(
          `${label}: ${(error as Error).message.slice(0, 80)}${cause ? ` (${cause.message.slice(0, 120)})` : ""}`,
        );
      }
    }
    const faults = log.flatMap((entry) =>
      entry.problems.map((problem) => `${entry.method} ${entry.template}: ${problem}`),
    );
    const operations = new Set(log.map((entry) => `${entry.method} ${entry.template}`));
    summary.push(
      `${name}: ${log.length} requests, ${operations.size} operations, ${faults.length} faults; examples our parsers refused: ${unreadable.length === 0 ? "none" : unreadable.join("; ")}`,
    );
    expect(faults).toEqual([]);
    // Every method reached GitHub at least once (a method that returned before asking would
    // check nothing).
    expect(operations.size).toBeGreaterThanOrEqual(30);
    if (name.startsWith("ghes")) expect(operations).toContain("GET /meta");
    if (name === "api.github.com") dotcom.push(...log);
  });
});

describe("app.yml's permissions", () => {
  it("are exactly what the app's requests need: read for reads, write for writes", () => {
    expect(dotcom.length).toBeGreaterThan(0);
    const needed: Record<string, string> = { metadata: "read" };
    for (const entry of dotcom) {
      const permission = permissionFor(entry.category ?? "");
      if (permission === undefined) continue;
      if (entry.method !== "GET") needed[permission] = "write";
      else needed[permission] ??= "read";
    }
    const app = readAppYml(readFileSync(new URL("../../app.yml", import.meta.url), "utf8"));
    expect(
      Object.fromEntries(app.permissions.map((permission) => [permission.name, permission.access])),
    ).toEqual(needed);
  });
});
