// The LLM client's only way to the network where the local backend gives the runner none
// (issue 34.1): a `fetch` for the Anthropic SDK that sends every request through the job's
// egress proxy, a Unix socket (EVOKERNEL_LLM_PROXY_SOCKET) that answers HTTP CONNECT for the
// LLM's API host alone (src/app/dispatch/egress-proxy.ts). Each request opens the socket,
// asks `CONNECT host:port`, then speaks HTTP over it, through TLS for an https URL (the
// certificate checked against the host, as fetch would): the TLS is ours end to end, the app
// sees neither the key nor the requests. A response's body streams as it arrives.
import { request as httpRequest } from "node:http";
import { connect as netConnect, isIP, type Socket } from "node:net";
import { Readable } from "node:stream";
import { connect as tlsConnect, type ConnectionOptions } from "node:tls";

/** The longest CONNECT answer (status line, headers and a refusal's text) read. */
const MAX_ANSWER = 16_384;

/** Statuses whose response has no body (fetch's Response refuses one). */
const NO_BODY = new Set([101, 204, 205, 304]);

/**
 * A fetch whose every request goes through the CONNECT proxy at `socketPath`. `tls` adds to
 * the TLS options (a test's certificate authority); the system's authorities otherwise.
 */
export function fetchThroughProxy(
  socketPath: string,
  tls: Pick<ConnectionOptions, "ca"> = {},
): typeof globalThis.fetch {
  return async function proxiedFetch(input, init) {
    const request = new Request(input, init);
    const url = new URL(request.url);
    if (url.protocol !== "https:" && url.protocol !== "http:")
      throw new TypeError(`the LLM proxy's fetch speaks http and https, not ${url.protocol}`);
    const secure = url.protocol === "https:";
    const port = url.port === "" ? (secure ? 443 : 80) : Number(url.port);
    const body = request.body === null ? undefined : Buffer.from(await request.arrayBuffer());
    const headers: Record<string, string> = Object.fromEntries(request.headers);
    headers["host"] = url.host;
    headers["accept-encoding"] ??= "identity";
    // one tunnel a request: closed once its response ends (nothing held open at exit)
    headers["connection"] = "close";
    delete headers["keep-alive"];
    if (body !== undefined) headers["content-length"] = String(body.length);
    return await new Promise<Response>((resolve, reject) => {
      const req = httpRequest(
        {
          host: url.hostname,
          port,
          path: `${url.pathname}${url.search}`,
          method: request.method,
          headers,
          signal: request.signal,
          createConnection: (_options, ready) => {
            tunnel(socketPath, url.hostname, port, secure, tls).then(
              (socket) => ready(null, socket),
              (error: Error) => ready(error, undefined as unknown as Socket),
            );
            return undefined;
          },
        },
        (response) => {
          const status = response.statusCode ?? 502;
          const answer = new Headers();
          const raw = response.rawHeaders;
          for (let at = 0; at + 1 < raw.length; at += 2) answer.append(raw[at]!, raw[at + 1]!);
          const empty = NO_BODY.has(status) || request.method === "HEAD";
          if (empty) response.resume();
          resolve(
            new Response(empty ? null : (Readable.toWeb(response) as ReadableStream<Uint8Array>), {
              status,
              statusText: response.statusMessage ?? "",
              headers: answer,
            }),
          );
        },
      );
      req.once("error", reject);
      req.end(body);
    });
  };
}

/**
 * A connection to `host:port` through the proxy: the socket after the proxy's 200, wrapped
 * in TLS (SNI and the certificate's name: `host`) when `secure`. Rejects with the proxy's own
 * words where it refuses.
 */
function tunnel(
  socketPath: string,
  hostname: string,
  port: number,
  secure: boolean,
  tls: Pick<ConnectionOptions, "ca">,
): Promise<Socket> {
  const authority = `${hostname}:${port}`;
  return new Promise<Socket>((resolve, reject) => {
    const socket = netConnect(socketPath);
    let answer = Buffer.alloc(0);
    const fail = (message: string, cause?: Error) => {
      socket.destroy();
      reject(new Error(message, cause === undefined ? {} : { cause }));
    };
    socket.once("error", (error) =>
      fail(
        `cannot open the LLM proxy's socket ${socketPath} (${error.message}): the job's proxy is gone or the socket is not this user's`,
        error,
      ),
    );
    socket.once("connect", () =>
      socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`),
    );
    const refused = () => {
      const text = answer.toString("utf8");
      const [status = "", ...rest] = text.split("\r\n");
      const words = text.slice(text.indexOf("\r\n\r\n") + 4).trim() || rest.join(" ").trim();
      fail(
        `the LLM proxy refused CONNECT ${authority}: ${status.trim()}${words ? `: ${words}` : ""}`,
      );
    };
    const onData = (chunk: Buffer) => {
      answer = Buffer.concat([answer, chunk]);
      const end = answer.indexOf("\r\n\r\n");
      if (end === -1) {
        if (answer.length > MAX_ANSWER) refused();
        return;
      }
      if (!/^HTTP\/1\.[01] 200\b/.test(answer.toString("latin1", 0, end))) {
        // a refusal's text follows its head, up to the proxy's end of the connection
        if (answer.length > MAX_ANSWER) refused();
        return;
      }
      socket.off("data", onData);
      socket.off("end", refused);
      const rest = answer.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      socket.removeAllListeners("error");
      if (!secure) {
        resolve(socket);
        return;
      }
      // once TLS holds it, what fails below it fails the TLS socket, which the request hears
      socket.on("error", () => undefined);
      const wrapped = tlsConnect({
        ...tls,
        socket,
        host: hostname.replace(/^\[(.*)\]$/, "$1"),
        // SNI names a host, never an address (RFC 6066)
        ...(isIP(hostname.replace(/^\[(.*)\]$/, "$1")) === 0 ? { servername: hostname } : {}),
        ALPNProtocols: ["http/1.1"],
      });
      wrapped.once("secureConnect", () => {
        wrapped.removeAllListeners("error");
        resolve(wrapped);
      });
      wrapped.once("error", (error: Error) =>
        fail(`TLS to ${authority} through the LLM proxy failed: ${error.message}`, error),
      );
    };
    socket.on("data", onData);
    socket.once("end", refused);
  });
}
