// Webhook bodies, taken before Probot's middleware sees them: refused with 413 above GitHub's
// 25 MB (at once when Content-Length says so, else at the first byte past it, the socket
// closed), and read under a shared byte budget so a burst of large deliveries waits on TCP
// back-pressure instead of filling the heap. As the bytes arrive they are signed (HMAC) and
// string values longer than any field the app reads are emptied (long-strings.ts), so a
// 24 MB body that is one long text costs kilobytes, not the three copies (bytes, decoded
// text, parsed object) it cost before. The body is then handed to @octokit/webhooks as
// `rawBody`, which verifies and parses it without reading the stream again: untouched when
// nothing was emptied, else only after its own signature matched, and signed again with the
// same secret so that what Probot verifies is exactly what it parses.
import { createHmac, timingSafeEqual } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { boundedChunks, checkAnnounced, TooLargeError } from "./bounded-read.js";
import { createLongStringFilter } from "./long-strings.js";

export interface ByteBudget {
  acquire(bytes: number): Promise<void>;
  release(bytes: number): void;
}

/** First come, first served: a large body waits for its turn rather than overtaking. */
export function createByteBudget(total: number): ByteBudget {
  let free = total;
  const waiting: { bytes: number; resolve: () => void }[] = [];
  function wake(): void {
    while (waiting[0] && waiting[0].bytes <= free) {
      const next = waiting.shift();
      if (!next) return;
      free -= next.bytes;
      next.resolve();
    }
  }
  return {
    acquire(bytes) {
      const need = Math.min(bytes, total);
      if (waiting.length === 0 && need <= free) {
        free -= need;
        return Promise.resolve();
      }
      return new Promise((resolve) => waiting.push({ bytes: need, resolve }));
    },
    release(bytes) {
      free += Math.min(bytes, total);
      wake();
    },
  };
}

export interface LongStrings {
  /** The webhook secret: a body with strings emptied is verified here first. */
  readonly secret: string;
  /** Escaped bytes a string may have before it is emptied. */
  readonly limit: number;
}

/**
 * Reads the request's body under `limit` into `rawBody`; false (and a 413 sent, the socket
 * closed) when it is too large, or a 400 when strings were emptied from a body whose
 * signature does not match. Errors of the socket itself end the request quietly.
 */
export async function takeWebhookBody(
  request: IncomingMessage,
  response: ServerResponse,
  limit: number,
  budget: ByteBudget,
  longStrings?: LongStrings,
): Promise<boolean> {
  const announced = Number(request.headers["content-length"] ?? Number.NaN);
  const reserve = Number.isFinite(announced) && announced >= 0 ? announced : limit;
  try {
    checkAnnounced(announced, limit, "the webhook body");
  } catch (error) {
    refuse(request, response, error as TooLargeError);
    return false;
  }
  await budget.acquire(reserve);
  try {
    const hmac = longStrings ? createHmac("sha256", longStrings.secret) : undefined;
    const filter = createLongStringFilter(longStrings?.limit ?? Number.POSITIVE_INFINITY);
    let total = 0;
    for await (const chunk of boundedChunks(request, limit, "the webhook body")) {
      total += chunk.byteLength;
      if (total > announced) throw new TooLargeError("the webhook body", announced, announced);
      hmac?.update(chunk);
      filter.push(chunk);
    }
    const body = filter.result();
    if (hmac && longStrings && filter.emptied > 0) {
      const signature = request.headers["x-hub-signature-256"];
      if (!signatureMatches(signature, hmac.digest())) {
        response
          .writeHead(400, { "content-type": "application/json" })
          .end(JSON.stringify({ error: "signature does not match event payload and secret" }));
        return false;
      }
      request.headers["x-hub-signature-256"] =
        `sha256=${createHmac("sha256", longStrings.secret).update(body).digest("hex")}`;
    }
    Object.assign(request, { body: {}, rawBody: body });
    return true;
  } catch (error) {
    if (error instanceof TooLargeError) refuse(request, response, error);
    else request.destroy();
    return false;
  } finally {
    budget.release(reserve);
  }
}

function signatureMatches(header: unknown, digest: Buffer): boolean {
  if (typeof header !== "string" || !header.startsWith("sha256=")) return false;
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === digest.length && timingSafeEqual(given, digest);
}

function refuse(request: IncomingMessage, response: ServerResponse, error: TooLargeError): void {
  response.writeHead(413, { "content-type": "text/plain", connection: "close" });
  // The rest of the body is never read: close the socket once the answer is out.
  response.end(`${error.message}\n`, () => request.destroy());
}
