// A small reader for the zip archives GitHub serves for workflow artifacts: the central
// directory, stored and deflated entries, nothing else. It only reads bytes; nothing in an
// artifact is ever executed.
import { inflateRawSync } from "node:zlib";

export class ZipError extends Error {
  override readonly name = "ZipError";
}

export interface ZipEntry {
  readonly name: string;
  readonly data: Buffer;
}

const EOCD_SIGNATURE = 0x06054b50;
const CENTRAL_SIGNATURE = 0x02014b50;
const LOCAL_SIGNATURE = 0x04034b50;
// An entry larger than this is not a result file: refuse it rather than inflate a zip bomb.
const MAX_ENTRY_BYTES = 64 * 1024 * 1024;

/** Every file entry of the archive, inflated. Throws ZipError on anything it cannot read. */
export function readZip(archive: Buffer): ZipEntry[] {
  const eocd = findEndOfCentralDirectory(archive);
  const count = archive.readUInt16LE(eocd + 10);
  let offset = archive.readUInt32LE(eocd + 16);
  const entries: ZipEntry[] = [];
  for (let i = 0; i < count; i++) {
    if (offset + 46 > archive.length || archive.readUInt32LE(offset) !== CENTRAL_SIGNATURE)
      throw new ZipError(`central directory entry ${i} is damaged`);
    const method = archive.readUInt16LE(offset + 10);
    const compressedSize = archive.readUInt32LE(offset + 20);
    const size = archive.readUInt32LE(offset + 24);
    const nameLength = archive.readUInt16LE(offset + 28);
    const extraLength = archive.readUInt16LE(offset + 30);
    const commentLength = archive.readUInt16LE(offset + 32);
    const localOffset = archive.readUInt32LE(offset + 42);
    const name = archive.toString("utf8", offset + 46, offset + 46 + nameLength);
    offset += 46 + nameLength + extraLength + commentLength;
    if (name.endsWith("/")) continue;
    if (size > MAX_ENTRY_BYTES)
      throw new ZipError(`${name} is ${size} bytes, over the ${MAX_ENTRY_BYTES} allowed`);
    entries.push({
      name,
      data: readEntry(archive, localOffset, method, compressedSize, size, name),
    });
  }
  return entries;
}

function findEndOfCentralDirectory(archive: Buffer): number {
  // The record is 22 bytes plus a comment of up to 65535 bytes, at the very end.
  const stop = Math.max(0, archive.length - 22 - 0xffff);
  for (let at = archive.length - 22; at >= stop; at--) {
    if (archive.readUInt32LE(at) === EOCD_SIGNATURE) return at;
  }
  throw new ZipError("not a zip archive (no end of central directory)");
}

function readEntry(
  archive: Buffer,
  localOffset: number,
  method: number,
  compressedSize: number,
  size: number,
  name: string,
): Buffer {
  if (localOffset + 30 > archive.length || archive.readUInt32LE(localOffset) !== LOCAL_SIGNATURE)
    throw new ZipError(`${name}: local header is damaged`);
  const start =
    localOffset +
    30 +
    archive.readUInt16LE(localOffset + 26) +
    archive.readUInt16LE(localOffset + 28);
  const raw = archive.subarray(start, start + compressedSize);
  if (raw.length !== compressedSize) throw new ZipError(`${name}: truncated`);
  if (method === 0) return Buffer.from(raw);
  if (method !== 8) throw new ZipError(`${name}: compression method ${method} is not supported`);
  try {
    const data = inflateRawSync(raw, { maxOutputLength: MAX_ENTRY_BYTES });
    if (data.length !== size)
      throw new ZipError(`${name}: inflated to ${data.length} bytes, expected ${size}`);
    return data;
  } catch (error) {
    if (error instanceof ZipError) throw error;
    throw new ZipError(`${name}: cannot inflate`, { cause: error });
  }
}
