#!/usr/bin/env node
// A local stand-in for GitHub's REST API (node:http on 127.0.0.1, no dependencies), answering
// the routes the evokernel app calls and recording every request, plus what it takes to
// drive the real app process: an App key, signed webhooks, and starting the app with its
// API base pointed here. The webhook benchmark, the app's end-to-end test and
// scripts/e2e-local.mjs (the GPU run) all use it; it runs with a bare `node`.
/* global fetch */
import { Buffer } from "node:buffer";
import { performance } from "node:perf_hooks";
import { clearTimeout, setTimeout } from "node:timers";
import { execFileSync, spawn } from "node:child_process";
import { createHash, createHmac, generateKeyPairSync } from "node:crypto";
import { once } from "node:events";
import { createServer } from "node:http";

/**
 * Starts the stand-in. `state` holds what GitHub would know: the config file's text, the PRs
 * ({ number: { head, base, headRef, fork, files: [{ filename, status, patch }] } }) and
 * collaborator permissions (default write). `repoDir`, a local clone, answers the git data
 * reads (trees, blobs, commit names) from its objects, as GitHub would from the repository's.
 */
export async function startStandin(state = {}) {
  const repoState = {
    config: state.config ?? null,
    pulls: state.pulls ?? {},
    permissions: state.permissions ?? {},
    repoDir: state.repoDir ?? null,
    artifacts: state.artifacts ?? {},
    owner: state.owner ?? "octo",
    repo: state.repo ?? "kernels",
    defaultBranch: state.defaultBranch ?? "main",
  };
  /** git in the clone, or null (no clone, or git cannot find the object). */
  function gitOut(args, encoding = "utf8") {
    if (repoState.repoDir === null) return null;
    try {
      return execFileSync("git", ["-C", repoState.repoDir, ...args], {
        encoding,
        stdio: ["ignore", "pipe", "ignore"],
      });
    } catch {
      return null;
    }
  }
  const requests = [];
  const comments = [];
  const checkRuns = [];
  const reviews = [];
  const dispatches = [];
  const refs = new Map();
  // Git objects the app creates (blobs, trees, commits), by their sha: what a branch it
  // writes holds, read back through the contents route (the nightly ledger on its branch).
  const objects = new Map();
  /** Pull requests and issues the app opens (numbered after the state's pulls). */
  const openedPulls = [];
  const issues = [];
  const waiters = new Set();
  /** Planted faults: { method, path: RegExp, status (absent: never answer), headers, times }. */
  const faults = [];
  let nextId = 1000;
  let nextNumber = Math.max(0, ...Object.keys(repoState.pulls).map(Number)) + 1;
  const repositoryJson = () => ({
    id: 1,
    name: repoState.repo,
    full_name: `${repoState.owner}/${repoState.repo}`,
    owner: { login: repoState.owner, type: "Organization" },
    default_branch: repoState.defaultBranch,
    private: false,
    archived: false,
  });
  /** A branch's head: one the app wrote here, else the clone's own (main, the PR's branch). */
  function refSha(ref) {
    const written = refs.get(ref);
    if (written !== undefined) return written;
    return gitOut(["rev-parse", "--verify", "--quiet", `${ref}^{commit}`])?.trim() || undefined;
  }
  /** A file's bytes at a commit: in one the app wrote (its tree, then its base), or the clone's. */
  function fileAt(commit, path) {
    const written = objects.get(commit);
    if (written?.type === "commit") {
      const tree = objects.get(written.tree);
      if (tree?.type === "tree") {
        const entry = tree.entries.find((e) => e.path === path);
        if (entry) {
          const blob = objects.get(entry.sha);
          return blob?.type === "blob"
            ? blob.bytes
            : gitOut(["cat-file", "blob", entry.sha], "buffer");
        }
        return tree.base === undefined
          ? null
          : gitOut(["cat-file", "blob", `${tree.base}:${path}`], "buffer");
      }
      return null;
    }
    return gitOut(["cat-file", "blob", `${commit}:${path}`], "buffer");
  }
  /**
   * One level of a tree, as GitHub lists it (a commit's sha names its tree): one the app wrote
   * (its entries, whose paths may name subfolders, over its base tree's) or the clone's; null
   * where there is none.
   */
  function treeListing(sha) {
    const written = objects.get(sha);
    if (written?.type === "commit") return treeListing(written.tree);
    if (written?.type !== "tree") {
      const listing = gitOut(["ls-tree", "-z", "--full-tree", sha]);
      if (listing === null) return null;
      return listing
        .split("\0")
        .filter((line) => line !== "")
        .map((line) => {
          const [meta, path] = line.split("\t");
          const [mode, type, entrySha] = meta.split(" ");
          return { path, mode, type, sha: entrySha };
        });
    }
    const byName = new Map(
      (written.base === undefined ? [] : (treeListing(written.base) ?? [])).map((e) => [e.path, e]),
    );
    const nested = new Map();
    for (const entry of written.entries) {
      const [first, ...rest] = entry.path.split("/");
      if (rest.length === 0) {
        if (entry.sha === null) byName.delete(first);
        else byName.set(first, { path: first, mode: entry.mode, type: entry.type, sha: entry.sha });
      } else {
        if (!nested.has(first)) nested.set(first, []);
        nested.get(first).push({ ...entry, path: rest.join("/") });
      }
    }
    for (const [name, entries] of nested) {
      const prior = byName.get(name);
      const base = prior?.type === "tree" ? prior.sha : undefined;
      const sub = putObject({ type: "tree", ...(base === undefined ? {} : { base }), entries });
      byName.set(name, { path: name, mode: "040000", type: "tree", sha: sub });
    }
    return [...byName.values()];
  }
  function putBlob(bytes) {
    const sha = gitBlobSha(bytes);
    objects.set(sha, { type: "blob", bytes });
    return sha;
  }
  function putObject(object) {
    const sha = createHash("sha1").update(JSON.stringify(object)).digest("hex");
    objects.set(sha, object);
    return sha;
  }
  function issueJson(issue) {
    return {
      number: issue.number,
      title: issue.title,
      body: issue.body,
      state: issue.state,
      labels: issue.labels.map((name) => ({ name })),
      html_url: `https://github.invalid/${repoState.owner}/${repoState.repo}/issues/${issue.number}`,
    };
  }
  function openedPullJson(pull) {
    return {
      number: pull.number,
      state: pull.state,
      merged_at: null,
      title: pull.title,
      body: pull.body,
      html_url: `https://github.invalid/${repoState.owner}/${repoState.repo}/pull/${pull.number}`,
      head: { ref: pull.head, sha: refSha(`refs/heads/${pull.head}`) ?? null },
      base: { ref: pull.base },
    };
  }

  function notify() {
    for (const waiter of waiters) {
      if (waiter.test()) {
        waiters.delete(waiter);
        waiter.resolve();
      }
    }
  }

  /** The routes, as [method, pattern, handler(match, body, url) → [status, body, headers?]]. */
  const routes = [
    [
      "POST",
      /^\/app\/installations\/(\d+)\/access_tokens$/,
      () => [
        201,
        {
          token: "ghs_standin",
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          permissions: {},
          repository_selection: "all",
        },
      ],
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/contents\/(.+)$/,
      (m, _body, url) => {
        const path = decodeURIComponent(m[3]);
        if (m[2] === ".github") return [404, { message: "Not Found" }];
        if (path === ".github/evokernel.yml")
          return repoState.config === null
            ? [404, { message: "Not Found" }]
            : [200, repoState.config, { "content-type": "text/plain; charset=utf-8" }];
        // Another file (the nightly ledger) at a ref: a commit the app wrote, or the clone's.
        const ref = url.searchParams.get("ref") ?? repoState.defaultBranch;
        const commit = /^[0-9a-f]{40}$/.test(ref) ? ref : refSha(`refs/heads/${ref}`);
        const bytes = commit === undefined ? null : fileAt(commit, path);
        if (bytes === null) return [404, { message: "Not Found" }];
        return [
          200,
          {
            type: "file",
            encoding: "base64",
            size: bytes.length,
            name: path.split("/").at(-1),
            path,
            sha: gitBlobSha(bytes),
            content: bytes.toString("base64"),
          },
        ];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
      (m) => {
        const pull = repoState.pulls[m[3]];
        return pull ? [200, pullJson(m, pull)] : [404, { message: "Not Found" }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/files$/,
      (m, _body, url) => {
        const files = repoState.pulls[m[3]]?.files ?? [];
        const perPage = Number(url.searchParams.get("per_page") ?? 30);
        const page = Number(url.searchParams.get("page") ?? 1);
        const slice = files.slice((page - 1) * perPage, page * perPage);
        const more = page * perPage < files.length;
        const next = `${url.origin}/api/v3${url.pathname.replace(/^\/api\/v3/, "")}?per_page=${perPage}&page=${page + 1}`;
        return [200, slice, more ? { link: `<${next}>; rel="next"` } : {}];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/collaborators\/([^/]+)\/permission$/,
      (m) => [200, { permission: repoState.permissions[m[3]] ?? "write" }],
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)\/reactions$/,
      () => [201, { id: nextId++ }],
    ],
    // The App itself (the app's bot login is <slug>[bot]: what its own comments carry).
    ["GET", /^\/app$/, () => [200, { id: 1, slug: "evokernel", name: "evokernel" }]],
    // Its installations (the start line counts them): the one the stand-in's repository has.
    [
      "GET",
      /^\/app\/installations$/,
      () => [
        200,
        [{ id: 1, account: { login: "octo", type: "Organization" }, suspended_at: null }],
      ],
    ],
    // The installation's repositories (the nightly tick walks them): the one repository.
    [
      "GET",
      /^\/installation\/repositories$/,
      () => [
        200,
        { total_count: 1, repository_selection: "selected", repositories: [repositoryJson()] },
      ],
    ],
    ["GET", /^\/repos\/([^/]+)\/([^/]+)$/, () => [200, repositoryJson()]],
    [
      "DELETE",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)$/,
      (m) => {
        const at = comments.findIndex((c) => c.id === Number(m[3]));
        if (at < 0) return [404, { message: "Not Found" }];
        comments.splice(at, 1);
        return [204, ""];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
      (m) => [200, comments.filter((c) => c.issue === Number(m[3])).map(commentJson)],
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)\/comments$/,
      (m, body) => {
        const comment = { id: nextId++, issue: Number(m[3]), body: body.body, edits: 0 };
        comments.push(comment);
        return [201, commentJson(comment)];
      },
    ],
    [
      "PATCH",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/comments\/(\d+)$/,
      (m, body) => {
        const comment = comments.find((c) => c.id === Number(m[3]));
        if (!comment) return [404, { message: "Not Found" }];
        comment.body = body.body;
        comment.edits++;
        return [200, commentJson(comment)];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/check-runs$/,
      (_m, body) => {
        const run = {
          id: nextId++,
          status: "queued",
          conclusion: null,
          external_id: null,
          details_url: null,
          ...body,
          updates: [],
        };
        checkRuns.push(run);
        return [201, checkRunJson(run)];
      },
    ],
    [
      "PATCH",
      /^\/repos\/([^/]+)\/([^/]+)\/check-runs\/(\d+)$/,
      (m, body) => {
        const run = checkRuns.find((r) => r.id === Number(m[3]));
        if (!run) return [404, { message: "Not Found" }];
        run.updates.push(body);
        Object.assign(run, body);
        if (body.conclusion) run.status = "completed";
        return [200, checkRunJson(run)];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/check-runs\/(\d+)$/,
      (m) => {
        const run = checkRuns.find((r) => r.id === Number(m[3]));
        return run ? [200, checkRunJson(run)] : [404, { message: "Not Found" }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/commits\/([^/]+)\/check-runs$/,
      (m, _body, url) => {
        // check_name and app_id filter as GitHub's do (every run is app 1's here).
        const name = url.searchParams.get("check_name");
        const app = url.searchParams.get("app_id");
        const runs = checkRuns
          .filter((r) => r.head_sha === m[3] && (name === null || r.name === name))
          .filter(() => app === null || app === "1")
          .map(checkRunJson);
        return [200, { total_count: runs.length, check_runs: runs }];
      },
    ],
    // github.com's meta has no installed_version (GHES's does): run details are sent.
    ["GET", /^\/meta$/, () => [200, { verifiable_password_authentication: false }]],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/actions\/workflows\/([^/]+)\/dispatches$/,
      (m, body) => {
        const id = nextId++;
        dispatches.push({
          workflow: decodeURIComponent(m[3]),
          ...body,
          runId: id,
          at: performance.now(),
        });
        const html = `https://github.invalid/${m[1]}/${m[2]}/actions/runs/${id}`;
        return body.return_run_details
          ? [200, { workflow_run_id: id, run_url: html, html_url: html }]
          : [204, ""];
      },
    ],
    ["POST", /^\/repos\/([^/]+)\/([^/]+)\/actions\/runs\/(\d+)\/cancel$/, () => [202, {}]],
    // A run's result artifact: `state.artifacts[runId]` holds its zip (the load run's bombs).
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/actions\/runs\/(\d+)\/artifacts$/,
      (m) => {
        const zip = repoState.artifacts[m[3]];
        const artifacts = zip
          ? [
              {
                id: Number(m[3]),
                name: "evokernel-result",
                expired: false,
                size_in_bytes: zip.length,
              },
            ]
          : [];
        return [200, { total_count: artifacts.length, artifacts }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/actions\/artifacts\/(\d+)\/zip$/,
      (m) => {
        const zip = repoState.artifacts[m[3]];
        return zip
          ? [200, zip, { "content-type": "application/zip" }]
          : [404, { message: "Not Found" }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/reviews$/,
      (m) => [
        200,
        reviews
          .filter((review) => review.pr === Number(m[3]))
          .map((review) => ({ body: review.body, user: { login: "evokernel[bot]", type: "Bot" } })),
      ],
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/reviews$/,
      (m, body) => {
        reviews.push({ pr: Number(m[3]), ...body });
        return [200, { id: nextId++ }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/trees\/([0-9a-f]+)$/,
      (m) => {
        const tree = treeListing(m[3]);
        return tree === null
          ? [404, { message: "Not Found" }]
          : [200, { sha: m[3], tree, truncated: false }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/blobs\/([0-9a-f]+)$/,
      (m) => {
        const written = objects.get(m[3]);
        const bytes =
          written?.type === "blob" ? written.bytes : gitOut(["cat-file", "blob", m[3]], "buffer");
        if (bytes === null) return [404, { message: "Not Found" }];
        return [200, { sha: m[3], content: bytes.toString("base64"), encoding: "base64" }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/commits\/([0-9a-fA-F]+)$/,
      (m) => {
        // The sha media type: the full SHA as text; an unknown or ambiguous name is 422.
        const sha = gitOut(["rev-parse", "--verify", "--quiet", `${m[3]}^{commit}`]);
        return sha === null
          ? [422, { message: `No commit found for SHA: ${m[3]}` }]
          : [200, sha.trim(), { "content-type": "application/vnd.github.sha; charset=utf-8" }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/commits\/([0-9a-f]+)$/,
      (m) => {
        const written = objects.get(m[3]);
        if (written?.type === "commit")
          return [
            200,
            {
              sha: m[3],
              message: written.message,
              tree: { sha: written.tree },
              parents: written.parents.map((sha) => ({ sha })),
            },
          ];
        const tree = gitOut(["rev-parse", "--verify", "--quiet", `${m[3]}^{tree}`])?.trim();
        return [200, { sha: m[3], tree: { sha: tree || `tree-${m[3].slice(0, 7)}` } }];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/blobs$/,
      (_m, body) => [
        201,
        {
          sha: putBlob(
            Buffer.from(String(body.content ?? ""), body.encoding === "base64" ? "base64" : "utf8"),
          ),
        },
      ],
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/trees$/,
      (_m, body) => {
        const entries = (body.tree ?? []).map((entry) => ({
          path: entry.path,
          mode: entry.mode,
          type: entry.type,
          sha: entry.content === undefined ? entry.sha : putBlob(Buffer.from(entry.content)),
        }));
        const sha = putObject({ type: "tree", base: body.base_tree, entries });
        return [201, { sha, tree: entries }];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/commits$/,
      (_m, body) => {
        const commit = {
          type: "commit",
          message: body.message,
          tree: body.tree,
          parents: body.parents ?? [],
        };
        return [201, { sha: putObject(commit), message: body.message }];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/refs$/,
      (_m, body) => {
        if (refs.has(body.ref)) return [422, { message: "Reference already exists" }];
        refs.set(body.ref, body.sha);
        return [201, { ref: body.ref, object: { sha: body.sha } }];
      },
    ],
    [
      "PATCH",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/refs\/(.+)$/,
      (m, body) => {
        refs.set(`refs/${decodeURIComponent(m[3])}`, body.sha);
        return [200, { object: { sha: body.sha } }];
      },
    ],
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/git\/ref\/(.+)$/,
      (m) => {
        const ref = `refs/${decodeURIComponent(m[3])}`;
        const sha = refSha(ref);
        return sha
          ? [200, { ref, object: { sha, type: "commit" } }]
          : [404, { message: "Not Found" }];
      },
    ],
    // The pull requests the app opens (the nightly one), listed with the state's by head.
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls$/,
      (_m, _body, url) => {
        const head = url.searchParams.get("head");
        const state = url.searchParams.get("state") ?? "open";
        const listed = openedPulls
          .filter((pull) => head === null || `${repoState.owner}:${pull.head}` === head)
          .filter((pull) => state === "all" || pull.state === state)
          .toReversed()
          .map(openedPullJson);
        return [200, listed];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls$/,
      (_m, body) => {
        if (refSha(`refs/heads/${body.head}`) === undefined)
          return [422, { message: `Validation Failed: no branch ${body.head}` }];
        const pull = {
          number: nextNumber++,
          head: body.head,
          base: body.base,
          title: body.title,
          body: body.body,
          state: "open",
          edits: 0,
        };
        openedPulls.push(pull);
        return [201, openedPullJson(pull)];
      },
    ],
    [
      "PATCH",
      /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)$/,
      (m, body) => {
        const pull = openedPulls.find((p) => p.number === Number(m[3]));
        if (!pull) return [404, { message: "Not Found" }];
        for (const key of ["title", "body", "state"]) if (key in body) pull[key] = body[key];
        pull.edits++;
        return [200, openedPullJson(pull)];
      },
    ],
    // Issues (the nightly drift issue), found again by label.
    [
      "GET",
      /^\/repos\/([^/]+)\/([^/]+)\/issues$/,
      (_m, _body, url) => {
        const labels = (url.searchParams.get("labels") ?? "").split(",").filter(Boolean);
        const state = url.searchParams.get("state") ?? "open";
        const listed = issues
          .filter((issue) => labels.every((label) => issue.labels.includes(label)))
          .filter((issue) => state === "all" || issue.state === state)
          .map(issueJson);
        return [200, listed];
      },
    ],
    [
      "POST",
      /^\/repos\/([^/]+)\/([^/]+)\/issues$/,
      (_m, body) => {
        const issue = {
          number: nextNumber++,
          title: body.title,
          body: body.body ?? "",
          labels: (body.labels ?? []).map((label) =>
            typeof label === "string" ? label : label.name,
          ),
          state: "open",
          edits: 0,
        };
        issues.push(issue);
        return [201, issueJson(issue)];
      },
    ],
    [
      "PATCH",
      /^\/repos\/([^/]+)\/([^/]+)\/issues\/(\d+)$/,
      (m, body) => {
        const issue = issues.find((i) => i.number === Number(m[3]));
        if (!issue) return [404, { message: "Not Found" }];
        for (const key of ["title", "body", "state"]) if (key in body) issue[key] = body[key];
        issue.edits++;
        return [200, issueJson(issue)];
      },
    ],
  ];

  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (chunk) => chunks.push(chunk));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://127.0.0.1");
      const path = url.pathname.replace(/^\/api\/v3/, "");
      const text = Buffer.concat(chunks).toString("utf8");
      let body;
      try {
        body = text ? JSON.parse(text) : {};
      } catch {
        body = { raw: text };
      }
      const record = {
        method: req.method,
        path,
        query: url.search,
        body,
        at: performance.now(),
        status: 404,
        routed: false,
      };
      requests.push(record);
      // A fault the test planted: GitHub answers an error (or nothing) instead, `times` times.
      const fault = faults.find((f) => f.times > 0 && f.method === req.method && f.path.test(path));
      if (fault) {
        fault.times--;
        record.routed = true;
        record.status = fault.status ?? 0;
        record.fault = true;
        // A hung request: never answered; the app's own time limit must cut it.
        if (fault.status === undefined) return;
        res.writeHead(fault.status, {
          "content-type": "application/json; charset=utf-8",
          ...(fault.headers ?? {}),
        });
        res.end(JSON.stringify({ message: fault.message ?? "the stand-in's planted fault" }));
        return;
      }
      let answer = [404, { message: `the stand-in has no route for ${req.method} ${path}` }];
      for (const [method, pattern, handler] of routes) {
        const match = req.method === method ? pattern.exec(path) : null;
        if (match) {
          record.routed = true;
          answer = handler(match, body, url);
          break;
        }
      }
      const [status, payload, headers = {}] = answer;
      record.status = status;
      const isText = typeof payload === "string";
      const isBytes = Buffer.isBuffer(payload);
      res.writeHead(status, {
        "content-type": isText ? "text/plain; charset=utf-8" : "application/json; charset=utf-8",
        ...headers,
      });
      res.end(isText || isBytes ? payload : JSON.stringify(payload));
      notify();
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address();

  return {
    host: `127.0.0.1:${port}`,
    url: `http://127.0.0.1:${port}`,
    state: repoState,
    requests,
    comments,
    checkRuns,
    reviews,
    dispatches,
    refs,
    objects,
    openedPulls,
    issues,
    faults,
    /** The text of `path` at a branch or commit: one the app wrote, or the clone's. */
    readFile(ref, path) {
      const commit = /^[0-9a-f]{40}$/.test(ref) ? ref : refSha(`refs/heads/${ref}`);
      const bytes = commit === undefined ? null : fileAt(commit, path);
      return bytes === null ? undefined : bytes.toString("utf8");
    },
    /** A commit the app wrote: its message, tree and parents. */
    commit(sha) {
      const written = objects.get(sha);
      return written?.type === "commit" ? written : undefined;
    },
    /** Resolves when `test()` holds (checked after every request), or rejects after `ms`. */
    waitFor(test, ms = 30_000, what = "the stand-in to see it") {
      if (test()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const waiter = { test, resolve };
        waiters.add(waiter);
        setTimeout(() => {
          if (!waiters.delete(waiter)) return;
          reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
        }, ms).unref();
      });
    },
    /** Requests the stand-in had no route for: the app called something it does not know. */
    unknown() {
      return requests.filter((r) => !r.routed);
    },
    close() {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

function pullJson(m, pull) {
  const repo = { full_name: `${m[1]}/${m[2]}`, name: m[2], owner: { login: m[1] } };
  return {
    number: Number(m[3]),
    state: pull.state ?? "open",
    draft: pull.draft ?? false,
    head: {
      sha: pull.head,
      ref: pull.headRef ?? "pr-branch",
      repo: pull.fork ? { ...repo, full_name: `fork/${m[2]}` } : repo,
    },
    base: { sha: pull.base, ref: pull.baseRef ?? "main", repo },
  };
}

function commentJson(comment) {
  return { id: comment.id, body: comment.body, user: { login: "evokernel[bot]", type: "Bot" } };
}

function checkRunJson(run) {
  return {
    id: run.id,
    name: run.name,
    head_sha: run.head_sha,
    status: run.status,
    conclusion: run.conclusion,
    external_id: run.external_id,
    details_url: run.details_url,
    output: run.output,
    actions: run.actions,
    app: { id: 1 },
  };
}

/** git's object id of a blob with these bytes: the sha GitHub gives the blob it stores. */
function gitBlobSha(bytes) {
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

/** An RSA key for a made-up App: Probot signs its JWTs with it; the stand-in never checks. */
export function generateAppKey() {
  const { privateKey } = generateKeyPairSync("rsa", {
    modulusLength: 2048,
    publicKeyEncoding: { type: "spki", format: "pem" },
    privateKeyEncoding: { type: "pkcs8", format: "pem" },
  });
  return privateKey;
}

/** GitHub's X-Hub-Signature-256 of a webhook body. */
export function signWebhook(secret, body) {
  return `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
}

/** POSTs a signed webhook to the app; resolves with the status and the milliseconds it took. */
export async function sendWebhook(appUrl, secret, name, payload, id) {
  const body = JSON.stringify(payload);
  const started = performance.now();
  const response = await fetch(`${appUrl}/api/github/webhooks`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-github-event": name,
      "x-github-delivery": id,
      "x-hub-signature-256": signWebhook(secret, body),
      "user-agent": "GitHub-Hookshot/standin",
    },
    body,
  });
  await response.arrayBuffer();
  return { status: response.status, ms: performance.now() - started };
}

/**
 * Starts the app process (`node ENTRY`) against the stand-in and resolves once it listens.
 * The app binds the port it is given (0, the default: one the system chooses) and reports
 * the port it got over the IPC channel (src/app/main.ts), so no port is chosen here for it.
 * `env` adds to or overrides the app's environment; `inheritEnv` starts from this process's.
 */
export async function startApp({
  entry,
  standin,
  port = 0,
  secret,
  privateKey,
  env = {},
  cwd,
  log = false,
  inheritEnv = false,
  nodeArgs = [],
}) {
  const child = spawn(process.execPath, [...nodeArgs, entry], {
    cwd,
    env: {
      // inheritEnv: the real runner needs CUDA's and Python's variables (the GPU run).
      ...(inheritEnv ? process.env : {}),
      PATH: process.env.PATH ?? "",
      HOME: process.env.HOME ?? "",
      APP_ID: "1",
      PRIVATE_KEY: privateKey,
      WEBHOOK_SECRET: secret,
      GHE_HOST: standin.host,
      GHE_PROTOCOL: "http",
      HOST: "127.0.0.1",
      PORT: String(port),
      LOG_LEVEL: port === 0 ? "info" : "warn",
      LOG_FORMAT: "json",
      // the stand-in serves one repository's PR routes, not the nightly tick's installation
      // listing; a test of the nightly run turns it back on through `env`
      EVOKERNEL_NIGHTLY: "off",
      // likewise start-up recovery, which walks every installation's repositories
      EVOKERNEL_RECOVER: "off",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe", "ipc"],
  });
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
    if (log) process.stderr.write(chunk);
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
    if (log) process.stderr.write(chunk);
  });
  // No time limit of its own: a busy machine may take long to start the app, and the test
  // that called this has its own. An exit before the message is an error at once.
  const bound = await new Promise((resolve, reject) => {
    const onExit = (code, signal) =>
      reject(new Error(`the app exited (${signal ?? code}) before it listened:\n${output}`));
    child.once("exit", onExit);
    child.on("message", (message) => {
      if (message?.evokernel !== "listening") return;
      child.off("exit", onExit);
      resolve(message.port);
    });
  });
  // The port is known: the channel is not needed any more, and would keep this process up.
  child.disconnect();
  const url = `http://127.0.0.1:${bound}`;
  return {
    url,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await once(child, "exit");
      clearTimeout(timer);
    },
  };
}

/** A workflow_run.completed webhook payload for a run of the evokernel workflow. */
export function workflowRunEvent({
  owner = "octo",
  repo = "kernels",
  runId,
  conclusion = "success",
}) {
  return {
    action: "completed",
    installation: { id: 1 },
    repository: {
      id: 1,
      name: repo,
      full_name: `${owner}/${repo}`,
      owner: { login: owner, type: "Organization" },
      default_branch: "main",
      private: false,
    },
    workflow_run: {
      id: runId,
      event: "workflow_dispatch",
      status: "completed",
      conclusion,
      html_url: `https://github.invalid/${owner}/${repo}/actions/runs/${runId}`,
      path: ".github/workflows/evokernel.yml",
    },
  };
}

/** A pull_request webhook payload with the fields the app reads. */
export function pullRequestEvent({
  owner = "octo",
  repo = "kernels",
  number,
  head,
  base,
  action = "opened",
  before,
  fork = false,
  headRef = "pr-branch",
}) {
  const repository = {
    id: 1,
    name: repo,
    full_name: `${owner}/${repo}`,
    owner: { login: owner, type: "Organization" },
    default_branch: "main",
    private: false,
  };
  return {
    action,
    number,
    ...(before ? { before, after: head } : {}),
    installation: { id: 1 },
    repository,
    sender: { login: "alice", type: "User" },
    pull_request: {
      number,
      state: "open",
      draft: false,
      head: {
        sha: head,
        ref: headRef,
        repo: fork ? { ...repository, full_name: `fork/${repo}` } : repository,
      },
      base: { sha: base, ref: "main", repo: repository },
    },
  };
}

/**
 * An issue_comment webhook payload in GitHub's shape (@octokit/webhooks-examples'
 * issue_comment.created, as an App receives it): a comment on pull request `number`, seen as an
 * issue with its `pull_request` key, by `login` (a User; the stand-in answers its permission).
 */
export function issueCommentEvent({
  owner = "octo",
  repo = "kernels",
  number,
  body,
  commentId,
  login = "alice",
  action = "created",
  title = "Kernel changes",
  at = new Date().toISOString(),
}) {
  const api = `https://api.github.invalid/repos/${owner}/${repo}`;
  const html = `https://github.invalid/${owner}/${repo}`;
  const user = (name, type) => {
    const url = `https://api.github.invalid/users/${name}`;
    return {
      login: name,
      id: type === "User" ? 2 : 1,
      node_id: `U_${name}`,
      avatar_url: `https://avatars.github.invalid/u/${name}`,
      gravatar_id: "",
      url,
      html_url: `https://github.invalid/${name}`,
      followers_url: `${url}/followers`,
      following_url: `${url}/following{/other_user}`,
      gists_url: `${url}/gists{/gist_id}`,
      starred_url: `${url}/starred{/owner}{/repo}`,
      subscriptions_url: `${url}/subscriptions`,
      organizations_url: `${url}/orgs`,
      repos_url: `${url}/repos`,
      events_url: `${url}/events{/privacy}`,
      received_events_url: `${url}/received_events`,
      type,
      site_admin: false,
    };
  };
  const author = user(login, "User");
  // The repository's API links, as GitHub lists them (name, then the path under the repo).
  const links = Object.fromEntries(
    [
      ["forks", "/forks"],
      ["keys", "/keys{/key_id}"],
      ["collaborators", "/collaborators{/collaborator}"],
      ["teams", "/teams"],
      ["hooks", "/hooks"],
      ["issue_events", "/issues/events{/number}"],
      ["events", "/events"],
      ["assignees", "/assignees{/user}"],
      ["branches", "/branches{/branch}"],
      ["tags", "/tags"],
      ["blobs", "/git/blobs{/sha}"],
      ["git_tags", "/git/tags{/sha}"],
      ["git_refs", "/git/refs{/sha}"],
      ["trees", "/git/trees{/sha}"],
      ["statuses", "/statuses/{sha}"],
      ["languages", "/languages"],
      ["stargazers", "/stargazers"],
      ["contributors", "/contributors"],
      ["subscribers", "/subscribers"],
      ["subscription", "/subscription"],
      ["commits", "/commits{/sha}"],
      ["git_commits", "/git/commits{/sha}"],
      ["comments", "/comments{/number}"],
      ["issue_comment", "/issues/comments{/number}"],
      ["contents", "/contents/{+path}"],
      ["compare", "/compare/{base}...{head}"],
      ["merges", "/merges"],
      ["archive", "/{archive_format}{/ref}"],
      ["downloads", "/downloads"],
      ["issues", "/issues{/number}"],
      ["pulls", "/pulls{/number}"],
      ["milestones", "/milestones{/number}"],
      ["notifications", "/notifications{?since,all,participating}"],
      ["labels", "/labels{/name}"],
      ["releases", "/releases{/id}"],
      ["deployments", "/deployments"],
    ].map(([name, path]) => [`${name}_url`, `${api}${path}`]),
  );
  const org = `https://api.github.invalid/orgs/${owner}`;
  return {
    action,
    issue: {
      url: `${api}/issues/${number}`,
      repository_url: api,
      labels_url: `${api}/issues/${number}/labels{/name}`,
      comments_url: `${api}/issues/${number}/comments`,
      events_url: `${api}/issues/${number}/events`,
      html_url: `${html}/pull/${number}`,
      id: 100_000 + number,
      node_id: `PR_${number}`,
      number,
      title,
      user: author,
      labels: [],
      state: "open",
      locked: false,
      assignee: null,
      assignees: [],
      milestone: null,
      comments: 1,
      created_at: at,
      updated_at: at,
      closed_at: null,
      author_association: "MEMBER",
      active_lock_reason: null,
      draft: false,
      pull_request: {
        url: `${api}/pulls/${number}`,
        html_url: `${html}/pull/${number}`,
        diff_url: `${html}/pull/${number}.diff`,
        patch_url: `${html}/pull/${number}.patch`,
        merged_at: null,
      },
      body: null,
      reactions: { url: `${api}/issues/${number}/reactions`, total_count: 0 },
      timeline_url: `${api}/issues/${number}/timeline`,
      performed_via_github_app: null,
      state_reason: null,
    },
    comment: {
      url: `${api}/issues/comments/${commentId}`,
      html_url: `${html}/pull/${number}#issuecomment-${commentId}`,
      issue_url: `${api}/issues/${number}`,
      id: commentId,
      node_id: `IC_${commentId}`,
      user: author,
      created_at: at,
      updated_at: at,
      author_association: "MEMBER",
      body,
      reactions: { url: `${api}/issues/comments/${commentId}/reactions`, total_count: 0 },
      performed_via_github_app: null,
    },
    repository: {
      id: 1,
      node_id: "R_1",
      name: repo,
      full_name: `${owner}/${repo}`,
      private: false,
      owner: user(owner, "Organization"),
      html_url: html,
      description: null,
      fork: false,
      url: api,
      ...links,
      created_at: "2026-01-01T00:00:00Z",
      updated_at: at,
      pushed_at: at,
      git_url: `git://github.invalid/${owner}/${repo}.git`,
      ssh_url: `git@github.invalid:${owner}/${repo}.git`,
      clone_url: `${html}.git`,
      svn_url: html,
      homepage: null,
      size: 1,
      stargazers_count: 0,
      watchers_count: 0,
      language: "Cuda",
      has_issues: true,
      has_projects: false,
      has_downloads: true,
      has_wiki: false,
      has_pages: false,
      forks_count: 0,
      mirror_url: null,
      archived: false,
      disabled: false,
      open_issues_count: 1,
      license: null,
      forks: 0,
      open_issues: 1,
      watchers: 0,
      is_template: false,
      topics: [],
      visibility: "public",
      web_commit_signoff_required: false,
      custom_properties: {},
      default_branch: "main",
    },
    organization: {
      login: owner,
      id: 1,
      node_id: `O_${owner}`,
      url: org,
      repos_url: `${org}/repos`,
      events_url: `${org}/events`,
      hooks_url: `${org}/hooks`,
      issues_url: `${org}/issues`,
      members_url: `${org}/members{/member}`,
      public_members_url: `${org}/public_members{/member}`,
      avatar_url: `https://avatars.github.invalid/u/${owner}`,
      description: "",
    },
    sender: author,
    installation: { id: 1, node_id: "I_1" },
  };
}

/** Lets a bare `node test/helpers/github-standin.mjs` run one for poking at by hand. */
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const standin = await startStandin({ config: "dispatch: actions\n" });
  console.log(
    `GitHub stand-in on ${standin.url}/api/v3 (GHE_HOST=${standin.host} GHE_PROTOCOL=http); Ctrl-C stops it`,
  );
}
