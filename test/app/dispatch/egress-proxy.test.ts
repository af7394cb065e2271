// Issue 34.1: a local LLM job's runner has no network but the job's egress proxy, a Unix
// socket that answers CONNECT for the LLM's API host (ANTHROPIC_BASE_URL's host and port) and
// refuses every other with a 403 that says why. Real sockets: the "API host" is a plain HTTP
// server on 127.0.0.1:0, and another server beside it must never be reached.
import { once } from "node:events";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import { connect, createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type EgressProxy,
  llmApiHost,
  startEgressProxy,
} from "../../../src/app/dispatch/egress-proxy.js";

let dir: string;
let api: HttpServer;
let other: Server;
let otherConnections = 0;
const proxies: EgressProxy[] = [];

const portOf = (server: HttpServer | Server) => (server.address() as AddressInfo).port;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-egress-"));
  api = createHttpServer((_request, response) => response.end("the API stand-in\n"));
  api.listen(0, "127.0.0.1");
  other = createServer((socket) => {
    otherConnections += 1;
    socket.end("another host\n");
  });
  other.listen(0, "127.0.0.1");
  otherConnections = 0;
  await Promise.all([once(api, "listening"), once(other, "listening")]);
});

afterEach(async () => {
  for (const proxy of proxies.splice(0)) await proxy.close();
  api.closeAllConnections();
  await new Promise((resolve) => api.close(resolve));
  await new Promise((resolve) => other.close(resolve));
  await rm(dir, { recursive: true, force: true });
});

async function proxyFor(env: Record<string, string>, uid?: number): Promise<EgressProxy> {
  const proxy = await startEgressProxy({
    path: join(dir, "llm-proxy.sock"),
    allow: llmApiHost(env),
    ...(uid === undefined ? {} : { uid }),
  });
  proxies.push(proxy);
  return proxy;
}

/**
 * What a client of the socket reads after writing `head` and, once a 200 came, `then`: the
 * whole text, up to the end of the connection.
 */
function exchange(path: string, head: string, then = ""): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    let text = "";
    let sent = false;
    socket.on("connect", () => socket.write(head));
    socket.on("data", (chunk: Buffer) => {
      text += chunk.toString();
      if (!sent && /^HTTP\/1\.1 200 .*\r\n\r\n/.test(text)) {
        sent = true;
        socket.write(then);
      }
    });
    socket.on("end", () => resolve(text));
    socket.on("error", reject);
  });
}

const connectTo = (target: string) => `CONNECT ${target} HTTP/1.1\r\nHost: ${target}\r\n\r\n`;
const GET = "GET /v1/messages HTTP/1.1\r\nHost: api\r\nConnection: close\r\n\r\n";

describe("the LLM's API host", () => {
  it("is ANTHROPIC_BASE_URL's host and port, else api.anthropic.com:443", () => {
    expect(llmApiHost({})).toEqual({ host: "api.anthropic.com", port: 443 });
    expect(llmApiHost({ ANTHROPIC_BASE_URL: " " })).toEqual({
      host: "api.anthropic.com",
      port: 443,
    });
    expect(llmApiHost({ ANTHROPIC_BASE_URL: "http://127.0.0.1:8080/v1" })).toEqual({
      host: "127.0.0.1",
      port: 8080,
    });
    expect(llmApiHost({ ANTHROPIC_BASE_URL: "https://LLM.Example.com" })).toEqual({
      host: "llm.example.com",
      port: 443,
    });
    expect(llmApiHost({ ANTHROPIC_BASE_URL: "http://[::1]" })).toEqual({ host: "[::1]", port: 80 });
    expect(() => llmApiHost({ ANTHROPIC_BASE_URL: "ftp://x" })).toThrow(
      "ANTHROPIC_BASE_URL=ftp://x is not an http(s) URL",
    );
  });
});

describe("a job's egress proxy", () => {
  it("pipes a CONNECT to the API host, and refuses any other host with a 403 that says why", async () => {
    const proxy = await proxyFor({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${portOf(api)}` });
    expect(proxy.allowed).toBe(`127.0.0.1:${portOf(api)}`);

    const allowed = await exchange(proxy.path, connectTo(`127.0.0.1:${portOf(api)}`), GET);
    expect(allowed).toMatch(/^HTTP\/1\.1 200 Connection established\r\n\r\nHTTP\/1\.1 200 OK/);
    expect(allowed).toContain("the API stand-in");

    for (const target of [
      `127.0.0.1:${portOf(other)}`,
      `localhost:${portOf(other)}`,
      `127.0.0.1:${portOf(api)}@127.0.0.1:${portOf(other)}`,
      "api.anthropic.com:443",
    ]) {
      const refused = await exchange(proxy.path, connectTo(target), GET);
      expect(refused, target).toMatch(/^HTTP\/1\.1 403 Forbidden\r\n/);
      expect(refused, target).toContain(
        `reaches only the LLM's API host 127.0.0.1:${portOf(api)} (ANTHROPIC_BASE_URL, else api.anthropic.com:443)`,
      );
      expect(refused, target).not.toContain("another host");
    }
    const plain = await exchange(
      proxy.path,
      `GET http://127.0.0.1:${portOf(other)}/ HTTP/1.1\r\n\r\n`,
    );
    expect(plain).toMatch(/^HTTP\/1\.1 405 /);
    expect(otherConnections).toBe(0);
  });

  it("allows api.anthropic.com:443 alone where ANTHROPIC_BASE_URL is unset", async () => {
    const proxy = await proxyFor({});
    expect(proxy.allowed).toBe("api.anthropic.com:443");
    const refused = await exchange(proxy.path, connectTo(`127.0.0.1:${portOf(api)}`));
    expect(refused).toMatch(/^HTTP\/1\.1 403 /);
    expect(refused).toContain("reaches only the LLM's API host api.anthropic.com:443");
  });

  it("says so with a 502 where the API host cannot be reached", async () => {
    const closed = createServer();
    closed.listen(0, "127.0.0.1");
    await once(closed, "listening");
    const port = portOf(closed);
    await new Promise((resolve) => closed.close(resolve));
    const proxy = await proxyFor({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}` });
    const answer = await exchange(proxy.path, connectTo(`127.0.0.1:${port}`));
    expect(answer).toMatch(/^HTTP\/1\.1 502 Bad Gateway\r\n/);
    expect(answer).toContain(`cannot reach 127.0.0.1:${port} (ECONNREFUSED)`);
  });

  it("closes with the job: its open tunnels are cut and nothing more connects", async () => {
    const proxy = await proxyFor({ ANTHROPIC_BASE_URL: `http://127.0.0.1:${portOf(api)}` });
    // A tunnel left open: the API stand-in answers and keeps the connection (keep-alive).
    const socket = connect(proxy.path);
    let text = "";
    let sent = false;
    const answered = new Promise<void>((resolve) =>
      socket.on("data", (chunk: Buffer) => {
        text += chunk.toString();
        if (!sent && text === "HTTP/1.1 200 Connection established\r\n\r\n") {
          sent = true;
          socket.write("GET / HTTP/1.1\r\nHost: api\r\n\r\n");
        }
        if (text.includes("the API stand-in")) resolve();
      }),
    );
    socket.on("error", () => undefined);
    const closed = once(socket, "close");
    socket.write(connectTo(`127.0.0.1:${portOf(api)}`));
    await answered;
    await proxy.close();
    await closed;
    await expect(exchange(proxy.path, connectTo(`127.0.0.1:${portOf(api)}`))).rejects.toThrow(
      /ENOENT|ECONNREFUSED/,
    );
  });

  it.skipIf(process.getuid?.() !== 0)(
    "is the runner's user's alone: its socket is given to that uid, mode 0600",
    async () => {
      const proxy = await proxyFor({}, 60998);
      const info = await stat(proxy.path);
      expect(info.isSocket()).toBe(true);
      expect(info.uid).toBe(60998);
      expect(info.mode & 0o777).toBe(0o600);
    },
  );
});
