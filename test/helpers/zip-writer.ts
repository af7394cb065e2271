// Writes small zip archives (stored or deflated entries) for tests of the app's artifact
// reader: what GitHub serves for `evokernel-result`.
import { crc32, deflateRawSync } from "node:zlib";

export function writeZip(
  files: Record<string, string | Buffer>,
  method: "deflate" | "store" = "deflate",
  options: { packed?: Record<string, { data: Buffer; declaredSize: number }> } = {},
): Buffer {
  const locals: Buffer[] = [];
  const centrals: Buffer[] = [];
  let offset = 0;
  const names = [...Object.keys(files), ...Object.keys(options.packed ?? {})];
  for (const name of names) {
    // `packed`: deflated bytes given as they are, with the size the headers claim (a bomb).
    const given = options.packed?.[name];
    const content = files[name] ?? "";
    const data = given
      ? Buffer.alloc(given.declaredSize)
      : Buffer.isBuffer(content)
        ? content
        : Buffer.from(content);
    const packed = given ? given.data : method === "deflate" ? deflateRawSync(data) : data;
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4);
    local.writeUInt16LE(method === "deflate" || given ? 8 : 0, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(packed.length, 18);
    local.writeUInt32LE(data.length, 22);
    local.writeUInt16LE(nameBytes.length, 26);
    const central = Buffer.alloc(46);
    central.writeUInt32LE(0x02014b50, 0);
    central.writeUInt16LE(20, 4);
    central.writeUInt16LE(20, 6);
    central.writeUInt16LE(method === "deflate" || given ? 8 : 0, 10);
    central.writeUInt32LE(crc, 16);
    central.writeUInt32LE(packed.length, 20);
    central.writeUInt32LE(data.length, 24);
    central.writeUInt16LE(nameBytes.length, 28);
    central.writeUInt32LE(offset, 42);
    locals.push(local, nameBytes, packed);
    centrals.push(central, nameBytes);
    offset += local.length + nameBytes.length + packed.length;
  }
  const directory = Buffer.concat(centrals);
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(names.length, 8);
  end.writeUInt16LE(names.length, 10);
  end.writeUInt32LE(directory.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, directory, end]);
}
