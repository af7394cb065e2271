// Bounded inputs (issue 17.1) through the app in-process with strict nock: an artifact is
// checked against its listed size and the download's Content-Length before it is read, read
// under a byte cap as it streams, and unzipped under caps; each case fails without its check.
import nock from "nock";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { parseConfigText } from "../../src/app/config-file.js";
import { zipBomb } from "../helpers/zip-bomb.js";
import {
  API,
  CONFIG_PATH,
  HEAD,
  OWNER,
  REPO,
  pullRequestPayload,
  startHarness,
  strictNock,
  workflowRunPayload,
  type Harness,
  mockJobStart,
  BASE,
} from "../helpers/app-harness.js";

const R = `/repos/${OWNER}/${REPO}`;
const KERNEL_FILES = [
  { filename: "kernels/softmax/kernel.cu", status: "modified", patch: "@@ -1 +1 @@\n-a\n+b" },
];

let mocks: { done(): void };
let harness: Harness;
let checks: unknown[];

beforeEach(async () => {
  mocks = strictNock({ failOnUnmatched: true });
  checks = [];
  harness = await startHarness();
});

afterEach(() => {
  mocks.done();
});

async function openPullWithJob(): Promise<void> {
  nock(API)
    .get(CONFIG_PATH)
    .reply(200, "pullRequests: bench\n", { "content-type": "text/plain; charset=utf-8" })
    .get(`${R}/pulls/7/files`)
    .query({ per_page: 100 })
    .reply(200, KERNEL_FILES)
    .post(`${R}/actions/workflows/evokernel.yml/dispatches`)
    .reply(200, { workflow_run_id: 4242, html_url: "https://github.com/o/r/actions/runs/4242" });
  mockJobStart(nock(API), {
    id: 900,
    pull: {
      number: 7,
      state: "open",
      head: { sha: HEAD, ref: "x", repo: { full_name: `${OWNER}/${REPO}` } },
      base: { sha: BASE, ref: "main", repo: { full_name: `${OWNER}/${REPO}` } },
    },
    linked: () => undefined,
  });
  await harness.receive("pull_request", pullRequestPayload("opened"));
}

function listArtifact(size: number): nock.Scope {
  return nock(API)
    .get(`${R}/actions/runs/4242/artifacts`)
    .query({ name: "evokernel-result", per_page: 100 })
    .reply(200, {
      total_count: 1,
      artifacts: [{ id: 77, name: "evokernel-result", expired: false, size_in_bytes: size }],
    });
}

function expectFailedCheck(): nock.Scope {
  return nock(API)
    .patch(`${R}/check-runs/900`, (body: nock.Body) => {
      checks.push(body);
      return true;
    })
    .reply(200, { id: 900 });
}

function summary(): string {
  const check = checks[0] as { conclusion: string; output: { summary: string } };
  expect(check.conclusion).toBe("failure");
  return check.output.summary;
}

describe("result artifacts", () => {
  it("refuses a 768 MiB artifact by its listed size: never downloaded", async () => {
    await openPullWithJob();
    listArtifact(768 * 1024 * 1024);
    expectFailedCheck();
    // Strict nock: a download request would find no mock and fail differently.
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(summary()).toMatch(/was not downloaded: artifact evokernel-result is 805306368 bytes/);
  });

  // Blob storage as a real server on loopback (nock would drain a stream whatever the reader
  // does): what it managed to write shows the app stopped reading.
  async function blobServer(contentLength: boolean) {
    const total = 256;
    let written = 0;
    const server = createServer((request, response) => {
      response.writeHead(200, {
        "content-type": "application/zip",
        ...(contentLength ? { "content-length": String(total * 256 * 1024) } : {}),
      });
      // One stored entry that claims 4 GB of data (and 100 bytes inflated), then zeros.
      const header = Buffer.alloc(37);
      header.writeUInt32LE(0x04034b50, 0);
      header.writeUInt16LE(20, 4);
      header.writeUInt32LE(0xfffffff0, 18);
      header.writeUInt32LE(100, 22);
      header.writeUInt16LE(7, 26);
      header.write("log.txt", 30);
      response.write(header);
      const piece = Buffer.alloc(256 * 1024);
      const more = () => {
        while (written < total) {
          written++;
          if (!response.write(piece)) return void response.once("drain", more);
        }
        response.end();
      };
      response.on("error", () => undefined);
      more();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    const { port } = server.address() as AddressInfo;
    nock.enableNetConnect("127.0.0.1");
    nock(API)
      .get(`${R}/actions/artifacts/77/zip`)
      .reply(302, "", { location: `http://127.0.0.1:${port}/a.zip` });
    return {
      written: () => written,
      total,
      close: () => {
        server.closeAllConnections();
        server.close();
      },
    };
  }

  it("refuses a download whose Content-Length is over the cap, before reading it", async () => {
    await openPullWithJob();
    listArtifact(1000);
    const blob = await blobServer(true);
    expectFailedCheck();
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    blob.close();
    expect(summary()).toMatch(/is 67108864 bytes, over the 33554432 bytes allowed/);
    expect(blob.written()).toBeLessThan(blob.total);
  });

  it("stops reading a download that streams past the cap without announcing its size", async () => {
    await openPullWithJob();
    listArtifact(1000);
    const blob = await blobServer(false);
    expectFailedCheck();
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    blob.close();
    expect(summary()).toMatch(/larger than the 33554432 bytes allowed/);
    expect(blob.written()).toBeLessThan(blob.total);
  });

  it("refuses a zip bomb (256 MiB of zeros in a quarter MB) with what happened", async () => {
    await openPullWithJob();
    const bomb = await zipBomb(256);
    listArtifact(bomb.length);
    nock(API)
      .get(`${R}/actions/artifacts/77/zip`)
      .reply(200, bomb, { "content-type": "application/zip" });
    expectFailedCheck();
    await harness.receive("workflow_run", workflowRunPayload(4242, "success"));
    expect(summary()).toMatch(/inflates more than 200 times its size/);
  });
});

describe("the config file", () => {
  function bigConfig(kb: number): string {
    let text = "pullRequests: bench\n";
    for (let i = 0; text.length < kb * 1024; i++) text += `key_number_${i}: value\n`;
    return text;
  }

  it("refuses a 192 KB config as it streams in, before YAML parses it", async () => {
    nock(API)
      .get(CONFIG_PATH)
      .reply(200, bigConfig(192), { "content-type": "text/plain; charset=utf-8" })
      .get(`${R}/commits/${HEAD}/check-runs`)
      .query({ check_name: "evokernel", filter: "all", per_page: 100 })
      .reply(200, { total_count: 0, check_runs: [] })
      .post(`${R}/check-runs`, (body: nock.Body) => {
        checks.push(body);
        return true;
      })
      .reply(201, { id: 901 });
    await harness.receive("pull_request", pullRequestPayload("opened"));
    const check = checks[0] as { conclusion: string; output: { summary: string } };
    expect(check.conclusion).toBe("failure");
    // Without the cap the file parses (seconds) and fails on its unknown keys instead.
    expect(check.output.summary).toMatch(/larger than the 16384 bytes allowed/);
  });

  it("parses YAML with limits: aliases, duplicate keys, one mapping", () => {
    const laughs = [
      "a: &a [x, x, x, x, x, x, x, x, x, x]",
      ...Array.from({ length: 8 }, (_, i) => {
        const from = String.fromCharCode(97 + i);
        const to = String.fromCharCode(98 + i);
        return `${to}: &${to} [${Array(10).fill(`*${from}`).join(", ")}]`;
      }),
    ].join("\n");
    expect(() => parseConfigText(laughs)).toThrow(/not valid YAML .*alias/i);
    expect(() => parseConfigText("tasks: [a]\ntasks: [b]\n")).toThrow(/`tasks` appears twice/);
    expect(() => parseConfigText("budget:\n  usd: 1\n  usd: 2\n")).toThrow(/`usd` appears twice/);
    expect(() => parseConfigText("- a\n- b\n")).toThrow(/mapping/);
    expect(() => parseConfigText("a: [\n")).toThrow(/not valid YAML/);
    expect(parseConfigText("")).toEqual({});
    expect(parseConfigText("x: &v 3\ny: *v\n")).toEqual({ x: 3, y: 3 });
    expect(() => parseConfigText(bigConfig(17))).toThrow(/over the 16384 bytes allowed/);
  });

  it("falls back to the organisation's .github repository and follows _extends", async () => {
    nock(API)
      .get(CONFIG_PATH)
      .reply(404, { message: "Not Found" })
      .get(/^\/repos\/octo\/\.github\/contents\/\.github(%2F|\/)evokernel\.yml$/)
      .reply(200, "_extends: shared-config\npullRequests: off\n", {
        "content-type": "text/plain; charset=utf-8",
      })
      .get(/^\/repos\/octo\/shared-config\/contents\/\.github(%2F|\/)evokernel\.yml$/)
      .reply(200, "pullRequests: bench\nbudget: { candidates: 3 }\n", {
        "content-type": "text/plain; charset=utf-8",
      });
    // pullRequests: off from the org's file wins over the extended one: nothing else runs.
    await harness.receive("pull_request", pullRequestPayload("opened"));
  });
});
