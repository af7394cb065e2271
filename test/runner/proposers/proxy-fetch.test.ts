// Issue 34.1: where a local LLM job's runner has no network, its Anthropic client sends every
// request through the job's egress proxy (EVOKERNEL_LLM_PROXY_SOCKET): CONNECT, then TLS to
// the API host over the tunnel. Against the app's real proxy and a TLS stand-in for the API on
// 127.0.0.1:0 (a certificate made for the test): a request and its body arrive, a response
// streams chunk by chunk, a refused host fails with the proxy's words, and the SDK's client
// made with `proxySocket` reaches a stand-in Messages API through it.
import { execa } from "execa";
import { once } from "node:events";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { connect, createServer, type AddressInfo, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EgressProxy, startEgressProxy } from "../../../src/app/dispatch/egress-proxy.js";
import { createAnthropicClient } from "../../../runner/src/proposers/anthropic-client.js";
import { fetchThroughProxy } from "../../../runner/src/proposers/proxy-fetch.js";

let dir: string;
let cert: string;
let key: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "evk-proxy-fetch-"));
  await execa("openssl", [
    ...["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"],
    ...["-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1"],
    ...["-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"],
  ]);
  cert = await readFile(join(dir, "cert.pem"), "utf8");
  key = await readFile(join(dir, "key.pem"), "utf8");
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const portOf = (server: Server) => (server.address() as AddressInfo).port;

async function listening<T extends Server>(server: T): Promise<T> {
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return server;
}

async function proxyTo(port: number, name: string): Promise<EgressProxy> {
  return startEgressProxy({ path: join(dir, `${name}.sock`), allow: { host: "127.0.0.1", port } });
}

async function bodyOf(request: IncomingMessage): Promise<string> {
  let text = "";
  for await (const chunk of request) text += String(chunk);
  return text;
}

describe("the LLM client's fetch through the job's proxy", () => {
  it("reaches the API host over TLS through the tunnel, and streams its response", async () => {
    let release: () => void = () => undefined;
    const second = new Promise<void>((resolve) => (release = resolve));
    const seen: { method?: string; url?: string; host?: string; body?: string } = {};
    const api = await listening(
      createHttpsServer({ key, cert }, (request, response) => {
        void bodyOf(request).then(async (body) => {
          Object.assign(seen, {
            method: request.method,
            url: request.url,
            host: request.headers.host,
            body,
          });
          response.writeHead(200, { "content-type": "text/event-stream" });
          response.write("event: first\n\n");
          // the rest only once the client has read the first chunk: a fetch that waited
          // for the whole body would never get here
          await second;
          response.end("event: second\n\n");
        });
      }),
    );
    const proxy = await proxyTo(portOf(api), "tls");
    try {
      const fetch = fetchThroughProxy(proxy.path, { ca: cert });
      const response = await fetch(`https://127.0.0.1:${portOf(api)}/v1/messages?beta=true`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": "sk-ant-test" },
        body: JSON.stringify({ stream: true }),
      });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/event-stream");
      const reader = (response.body as ReadableStream<Uint8Array>).getReader();
      const decoder = new TextDecoder();
      const first = await reader.read();
      expect(decoder.decode(first.value)).toBe("event: first\n\n");
      release();
      let rest = "";
      for (let chunk = await reader.read(); !chunk.done; chunk = await reader.read())
        rest += decoder.decode(chunk.value);
      expect(rest).toBe("event: second\n\n");
      expect(seen).toEqual({
        method: "POST",
        url: "/v1/messages?beta=true",
        host: `127.0.0.1:${portOf(api)}`,
        body: '{"stream":true}',
      });
    } finally {
      await proxy.close();
      api.close();
    }
  });

  it("checks the host's certificate as fetch would", async () => {
    const api = await listening(createHttpsServer({ key, cert }, (_q, response) => response.end()));
    const proxy = await proxyTo(portOf(api), "untrusted");
    try {
      // no `ca`: the system's authorities, which never signed the test's certificate
      await expect(
        fetchThroughProxy(proxy.path)(`https://127.0.0.1:${portOf(api)}/`),
      ).rejects.toThrow(/TLS to 127\.0\.0\.1:\d+ through the LLM proxy failed: .*certificate/);
    } finally {
      await proxy.close();
      api.close();
    }
  });

  it("fails a request to any other host with the proxy's refusal", async () => {
    const api = await listening(createHttpServer((_q, response) => response.end("api")));
    const elsewhere = await listening(createHttpServer((_q, response) => response.end("no")));
    const proxy = await proxyTo(portOf(api), "refuse");
    try {
      await expect(
        fetchThroughProxy(proxy.path)(`http://127.0.0.1:${portOf(elsewhere)}/`),
      ).rejects.toThrow(
        `the LLM proxy refused CONNECT 127.0.0.1:${portOf(elsewhere)}: HTTP/1.1 403 Forbidden: evokernel's LLM proxy reaches only the LLM's API host 127.0.0.1:${portOf(api)}`,
      );
      const reached = await fetchThroughProxy(proxy.path)(`http://127.0.0.1:${portOf(api)}/`);
      expect(await reached.text()).toBe("api");
    } finally {
      await proxy.close();
      api.close();
      elsewhere.close();
    }
  });

  it("ends a request at once when its signal aborts (the SDK's timeout and cancel)", async () => {
    let arrived: () => void = () => undefined;
    const waiting = new Promise<void>((resolve) => (arrived = resolve));
    const api = await listening(createHttpServer(() => arrived()));
    const proxy = await proxyTo(portOf(api), "abort");
    try {
      const abort = new AbortController();
      const pending = fetchThroughProxy(proxy.path)(`http://127.0.0.1:${portOf(api)}/`, {
        signal: abort.signal,
      });
      await waiting;
      abort.abort();
      await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    } finally {
      await proxy.close();
      api.closeAllConnections();
      api.close();
    }
  });

  it("is the Anthropic client's fetch where proxySocket is set", async () => {
    const requests: { key: string | undefined; body: unknown }[] = [];
    const api = await listening(
      createHttpServer((request, response) => {
        void bodyOf(request).then((body) => {
          requests.push({
            key: request.headers["x-api-key"] as string | undefined,
            body: JSON.parse(body),
          });
          response.writeHead(200, { "content-type": "application/json" });
          response.end(
            JSON.stringify({
              id: "msg_proxy",
              type: "message",
              role: "assistant",
              content: [{ type: "text", text: "through the proxy" }],
              model: "claude-sonnet-5-5",
              stop_reason: "end_turn",
              stop_sequence: null,
              usage: { input_tokens: 3, output_tokens: 4 },
            }),
          );
        });
      }),
    );
    const proxy = await proxyTo(portOf(api), "sdk");
    // a relay in front of the proxy, which counts the connections that come through it
    let relayed = 0;
    const relay = createServer((socket) => {
      relayed += 1;
      socket.pipe(connect(proxy.path)).pipe(socket);
    });
    relay.listen(join(dir, "relay.sock"));
    await once(relay, "listening");
    try {
      const client = createAnthropicClient({
        apiKey: "sk-ant-proxy-test",
        baseURL: `http://127.0.0.1:${portOf(api)}`,
        proxySocket: join(dir, "relay.sock"),
        maxRetries: 0,
      });
      const message = await client.createMessage({
        model: "claude-sonnet-5-5",
        max_tokens: 16,
        messages: [{ role: "user", content: "hi" }],
      });
      expect(message.content).toEqual([{ type: "text", text: "through the proxy" }]);
      expect(requests).toHaveLength(1);
      expect(requests[0]?.key).toBe("sk-ant-proxy-test");
      expect(relayed).toBe(1);
    } finally {
      relay.close();
      await proxy.close();
      api.close();
    }
  });
});
