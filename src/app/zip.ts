// The result artifact's zip, unzipped by fflate as its bytes stream in, under caps on the
// number of entries, each entry's size, the total and the ratio of inflated to compressed
// bytes: a 68 KB zip bomb stops after its first two megabytes, not at 3 GiB. Compressed input
// is fed in pieces no larger than could inflate (deflate tops out near 1032:1) past the ratio
// cap by more than about 1 MB before the caps are checked: 1 KB at first and while an archive
// inflates near the cap, up to 16 KB once an honest one's ratio leaves room. With 16 KB
// pieces throughout, each bomb put a 16 MB chunk on the heap before it was refused, and the
// load run's bombs held 50-70 MB of them (awaiting collection). Only entries the caller keeps
// are held; the rest are counted and dropped. Nothing in an artifact is ever executed.
import { Unzip, UnzipInflate, type UnzipFile } from "fflate";
import type { ZipLimits } from "./input-limits.js";

export class ZipError extends Error {
  override readonly name = "ZipError";
  constructor(
    message: string,
    /** Bytes inflated when the archive was refused (how far a bomb got). */
    readonly inflated = 0,
  ) {
    super(message);
  }
}

export interface ZipEntry {
  readonly name: string;
  readonly data: Buffer;
}

const MIN_PIECE = 1024;
const MAX_PIECE = 16 * 1024;
/** Deflate's highest ratio of inflated to compressed bytes (258 bytes per 2 bits, about). */
const DEFLATE_MAX_RATIO = 1032;
const RATIO_AFTER = 1024 * 1024;
const LOCAL_SIGNATURE = [0x50, 0x4b, 0x03, 0x04];

/**
 * The file entries of the zip streamed from `source` whose names `keep` accepts, inflated.
 * Throws ZipError on an archive it cannot read or one past `limits`; the source is released
 * (the download cancelled) as soon as that is known.
 */
export async function unzipBounded(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  limits: ZipLimits,
  keep: (name: string) => boolean = () => true,
): Promise<ZipEntry[]> {
  const kept: { name: string; parts: Uint8Array[] }[] = [];
  let failure: ZipError | undefined;
  let compressed = 0;
  let inflated = 0;
  let files = 0;
  const open = new Set<UnzipFile>();

  function fail(message: string): void {
    failure ??= new ZipError(message, inflated);
    for (const file of open) file.terminate();
    open.clear();
  }

  const unzip = new Unzip((file) => {
    if (failure || file.name.endsWith("/")) return;
    files++;
    if (files > limits.entries) return fail(`more than ${limits.entries} entries`);
    if (file.originalSize !== undefined && file.originalSize > limits.entryBytes)
      return fail(
        `${file.name} is ${file.originalSize} bytes, over the ${limits.entryBytes} allowed`,
      );
    const entry = keep(file.name) ? { name: file.name, parts: [] as Uint8Array[] } : undefined;
    if (entry) kept.push(entry);
    let size = 0;
    open.add(file);
    file.ondata = (error, chunk, final) => {
      if (failure) return;
      if (error) return fail(`${file.name}: cannot inflate (${error.message})`);
      size += chunk.length;
      inflated += chunk.length;
      if (size > limits.entryBytes)
        return fail(`${file.name} inflates past the ${limits.entryBytes} bytes allowed`);
      if (inflated > limits.totalBytes)
        return fail(`the archive inflates past the ${limits.totalBytes} bytes allowed`);
      if (inflated > RATIO_AFTER && inflated > limits.ratio * compressed)
        return fail(`the archive inflates more than ${limits.ratio} times its size (a zip bomb?)`);
      entry?.parts.push(chunk);
      if (!final) return;
      open.delete(file);
      if (file.originalSize !== undefined && size !== file.originalSize)
        fail(`${file.name}: inflated to ${size} bytes, its header says ${file.originalSize}`);
    };
    try {
      file.start();
    } catch {
      fail(`${file.name}: compression method ${file.compression} is not supported`);
    }
  });
  unzip.register(UnzipInflate);

  for await (const chunk of source) {
    if (compressed === 0 && !startsLikeZip(chunk)) fail("not a zip archive");
    for (let at = 0; at < chunk.length && !failure;) {
      // What may still inflate before the ratio check refuses, in compressed bytes.
      const room = Math.max(RATIO_AFTER, limits.ratio * compressed) - inflated;
      const size = Math.min(MAX_PIECE, Math.max(MIN_PIECE, Math.floor(room / DEFLATE_MAX_RATIO)));
      const piece = chunk.subarray(at, at + size);
      at += piece.length;
      compressed += piece.length;
      try {
        unzip.push(piece);
      } catch (error) {
        fail(`the archive is damaged (${error instanceof Error ? error.message : String(error)})`);
      }
    }
    if (failure) throw failure;
  }
  try {
    unzip.push(new Uint8Array(0), true);
  } catch (error) {
    fail(`the archive is damaged (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!failure && compressed === 0) fail("the archive is empty");
  if (!failure && open.size > 0) fail("the archive ends inside an entry (truncated)");
  if (failure) throw failure;
  return kept.map((entry) => ({ name: entry.name, data: Buffer.concat(entry.parts) }));
}

function startsLikeZip(chunk: Uint8Array): boolean {
  return chunk.length < 4 || LOCAL_SIGNATURE.every((byte, i) => chunk[i] === byte);
}

/** One buffer as chunks: for archives already in memory (tests). */
export function chunksOf(data: Uint8Array, size = 64 * 1024): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0; at < data.length; at += size) chunks.push(data.subarray(at, at + size));
  return chunks;
}
