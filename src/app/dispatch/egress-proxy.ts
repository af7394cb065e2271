// The one way out of a local LLM job's runner to the network (issue 34.1). Every confined
// runner is in a network namespace of its own with no link (job-processes.ts); for a job that
// runs the LLM proposer the app opens, for that job only, a Unix socket in the job's folder
// that answers HTTP `CONNECT host:port` for the LLM's API host (ANTHROPIC_BASE_URL's host and
// port, else api.anthropic.com:443) and for nothing else: any other request gets a 403 whose
// line says what is allowed. An allowed CONNECT is piped, byte for byte, to that host (the TLS
// is the runner's, end to end: the app sees neither the requests nor the key). The socket is
// the runner's user's alone (mode 0600), and it closes with the job, its connections with it.
import { chmod, lchown } from "node:fs/promises";
import { connect, createServer, type Socket } from "node:net";

/** The LLM's API host and port, as a CONNECT names them ("api.anthropic.com:443"). */
export interface ApiHost {
  /** As a URL's hostname spells it: lower case, an IPv6 address in brackets. */
  readonly host: string;
  readonly port: number;
}

/** The runner's Anthropic client's default base URL (runner/src/proposers/anthropic-client.ts). */
const DEFAULT_BASE_URL = "https://api.anthropic.com";

/** The longest CONNECT head read before the request is refused. */
const MAX_HEAD = 8192;

/**
 * The host the runner's LLM client talks to: ANTHROPIC_BASE_URL's host and port where set
 * (as the runner reads it: trimmed, empty as unset), else api.anthropic.com:443. Throws,
 * saying what to change, where ANTHROPIC_BASE_URL is not an http(s) URL.
 */
export function llmApiHost(env: Readonly<Record<string, string | undefined>>): ApiHost {
  const text = env["ANTHROPIC_BASE_URL"]?.trim() || DEFAULT_BASE_URL;
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "https:" && url.protocol !== "http:"))
    throw new Error(
      `ANTHROPIC_BASE_URL=${text} is not an http(s) URL, so the LLM job's proxy cannot tell which host to allow: set it to the API's base URL (https://host[:port]) or unset it`,
    );
  return {
    host: url.hostname,
    port: url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port),
  };
}

/** A job's proxy, listening. */
export interface EgressProxy {
  /** The Unix socket the runner connects to (EVOKERNEL_LLM_PROXY_SOCKET). */
  readonly path: string;
  /** The one host:port it reaches. */
  readonly allowed: string;
  /** Stops it: no new connection, every open one cut. Resolves once it is closed. */
  close(): Promise<void>;
}

export interface EgressProxyOptions {
  /**
   * Where the socket is made: a path no file holds yet, in a folder the runner will reach and
   * no other user can write in while the proxy starts (the job's folder before it is given).
   */
  readonly path: string;
  readonly allow: ApiHost;
  /** The runner's uid (and gid), where it is not the app's: the socket is given to it. */
  readonly uid?: number;
}

/** Starts a job's proxy; resolves once it listens, its socket the runner's alone. */
export async function startEgressProxy(options: EgressProxyOptions): Promise<EgressProxy> {
  const allowed = `${options.allow.host}:${options.allow.port}`;
  const open = new Set<Socket>();
  const track = (socket: Socket) => {
    open.add(socket);
    socket.once("close", () => open.delete(socket));
  };
  const server = createServer((client) => {
    track(client);
    serve(client, options.allow, allowed, track);
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", (error) =>
      reject(
        new Error(
          `the LLM job's proxy cannot listen at ${options.path} (${error.message}): give the job folder a shorter path (TMPDIR)`,
          { cause: error },
        ),
      ),
    );
    server.listen(options.path, resolve);
  });
  server.on("error", () => undefined);
  const close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      for (const socket of open) socket.destroy();
    });
  try {
    // never through a link (the folder should be the app's alone while this runs)
    if (options.uid !== undefined) await lchown(options.path, options.uid, options.uid);
    await chmod(options.path, 0o600);
  } catch (error) {
    await close();
    throw error;
  }
  return { path: options.path, allowed, close };
}

/** One connection from the runner: its CONNECT head read, then piped or refused. */
function serve(
  client: Socket,
  allow: ApiHost,
  allowed: string,
  track: (socket: Socket) => void,
): void {
  client.on("error", () => undefined);
  let head = Buffer.alloc(0);
  const onData = (chunk: Buffer) => {
    head = Buffer.concat([head, chunk]);
    const end = head.indexOf("\r\n\r\n");
    if (end === -1) {
      if (head.length > MAX_HEAD)
        refuse(
          client,
          431,
          "Request Header Fields Too Large",
          `a CONNECT head over ${MAX_HEAD} bytes`,
        );
      return;
    }
    client.off("data", onData);
    client.pause();
    const line = head.subarray(0, end).toString("latin1").split("\r\n")[0] ?? "";
    const rest = head.subarray(end + 4);
    const target = /^CONNECT (\S+) HTTP\/1\.[01]$/.exec(line)?.[1];
    if (target === undefined) {
      refuse(
        client,
        405,
        "Method Not Allowed",
        `evokernel's LLM proxy answers only CONNECT ${allowed}, not "${line.slice(0, 100)}"`,
      );
      return;
    }
    if (authorityOf(target) !== allowed) {
      refuse(
        client,
        403,
        "Forbidden",
        `evokernel's LLM proxy reaches only the LLM's API host ${allowed} (ANTHROPIC_BASE_URL, else api.anthropic.com:443), not ${target.slice(0, 300)}: a local job's runner has no other network`,
      );
      return;
    }
    const upstream = connect({ host: allow.host.replace(/^\[(.*)\]$/, "$1"), port: allow.port });
    track(upstream);
    let connected = false;
    upstream.once("connect", () => {
      connected = true;
      client.write("HTTP/1.1 200 Connection established\r\n\r\n");
      if (rest.length > 0) upstream.write(rest);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    });
    upstream.on("error", (error: NodeJS.ErrnoException) => {
      if (connected) client.destroy();
      else
        refuse(
          client,
          502,
          "Bad Gateway",
          `evokernel's LLM proxy cannot reach ${allowed} (${error.code ?? error.message}) from the app's machine`,
        );
    });
    // What the host sent is flushed to the runner before its end; the runner gone, so is the host.
    upstream.once("close", () => client.end());
    client.once("close", () => upstream.destroy());
  };
  client.on("data", onData);
}

/** "host:port" of a CONNECT target, its host lower-cased; undefined where it is not one. */
function authorityOf(target: string): string | undefined {
  const match = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]/@?#]+):(\d{1,5})$/.exec(target);
  if (match === null) return undefined;
  return `${match[1]?.toLowerCase()}:${Number(match[2])}`;
}

function refuse(client: Socket, status: number, reason: string, message: string): void {
  const body = `${message}\n`;
  client.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}
