// Reading a stream of bytes under a cap: the count is kept as the bytes arrive and the read
// stops at the first byte past the cap, so an oversized body is never held whole.

export class TooLargeError extends Error {
  override readonly name = "TooLargeError";
  constructor(
    readonly what: string,
    readonly limit: number,
    /** The size announced (Content-Length, a listed size), when one was. */
    readonly announced?: number,
  ) {
    super(
      `${what} is ${announced === undefined ? "larger than" : `${announced} bytes, over`} the ${limit} bytes allowed`,
    );
  }
}

/** The chunks of `source`, passed on until their total passes `limit`, then TooLargeError. */
export async function* boundedChunks(
  source: AsyncIterable<Uint8Array>,
  limit: number,
  what: string,
): AsyncGenerator<Uint8Array> {
  let total = 0;
  for await (const chunk of source) {
    total += chunk.byteLength;
    if (total > limit) throw new TooLargeError(what, limit);
    yield chunk;
  }
}

/** All of `source` in one Buffer, or TooLargeError as soon as it passes `limit`. */
export async function readBounded(
  source: AsyncIterable<Uint8Array>,
  limit: number,
  what: string,
  /** The size announced (Content-Length): the bytes go straight into one buffer of it. */
  expected?: number,
): Promise<Buffer> {
  if (
    expected !== undefined &&
    Number.isSafeInteger(expected) &&
    expected >= 0 &&
    expected <= limit
  ) {
    // One allocation, no list of chunks to concatenate: a 24 MB body is held once, not twice.
    const body = Buffer.allocUnsafe(expected);
    let at = 0;
    for await (const chunk of boundedChunks(source, limit, what)) {
      if (at + chunk.byteLength > expected) throw new TooLargeError(what, expected, expected);
      body.set(chunk, at);
      at += chunk.byteLength;
    }
    return at === expected ? body : body.subarray(0, at);
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of boundedChunks(source, limit, what)) chunks.push(chunk);
  return Buffer.concat(chunks);
}

/** A Content-Length (or a listed size) over `limit` is refused before a byte is read. */
export function checkAnnounced(size: unknown, limit: number, what: string): void {
  const bytes = typeof size === "string" ? Number(size) : size;
  if (typeof bytes === "number" && Number.isFinite(bytes) && bytes > limit)
    throw new TooLargeError(what, limit, bytes);
}
