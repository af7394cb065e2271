// Webhook bodies, taken before Probot's middleware sees them: refused with 413 above GitHub's
// 25 MB (at once when Content-Length says so, else at the first byte past it, the socket
// closed), and read under a shared byte budget so a burst of large deliveries waits on TCP
// back-pressure instead of filling the heap. The body is then handed to @octokit/webhooks as
// `rawBody`, which it verifies and parses without reading the stream again.
import type { IncomingMessage, ServerResponse } from "node:http";
import { checkAnnounced, readBounded, TooLargeError } from "./bounded-read.js";

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

/**
 * Reads the request's body under `limit` into `rawBody`; false (and a 413 sent, the socket
 * closed) when it is too large. Errors of the socket itself end the request quietly.
 */
export async function takeWebhookBody(
  request: IncomingMessage,
  response: ServerResponse,
  limit: number,
  budget: ByteBudget,
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
    const body = await readBounded(
      request,
      limit,
      "the webhook body",
      Number.isFinite(announced) ? announced : undefined,
    );
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

function refuse(request: IncomingMessage, response: ServerResponse, error: TooLargeError): void {
  response.writeHead(413, { "content-type": "text/plain", connection: "close" });
  // The rest of the body is never read: close the socket once the answer is out.
  response.end(`${error.message}\n`, () => request.destroy());
}
