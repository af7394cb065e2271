// Long string values dropped from a JSON body as its bytes stream in, so a 24 MB webhook
// whose size is one long text (a pasted log in a PR body, say) is never held whole, nor
// decoded and parsed into two more copies of it: in the load run each such payload left
// 50-70 MB of garbage on the heap. A string whose escaped bytes pass the limit becomes "";
// the rest of the JSON passes byte for byte. The filter only tracks string boundaries
// (a quote outside a string opens one; inside, a backslash escapes the next byte), which
// is all valid JSON needs; invalid JSON stays invalid and is refused by the parser later.

const QUOTE = 0x22;
const BACKSLASH = 0x5c;

export interface LongStringFilter {
  /** Feeds the next bytes; the ones kept are held (slices of `chunk`, not copies). */
  push(chunk: Uint8Array): void;
  /** The kept bytes, in one buffer. */
  result(): Buffer;
  /** How many strings were emptied. */
  readonly emptied: number;
}

export function createLongStringFilter(limit: number): LongStringFilter {
  const kept: Uint8Array[] = [];
  let keptBytes = 0;
  let inString = false;
  let escaped = false;
  let dropping = false;
  let length = 0;
  /** Where the current string's content starts in the output. */
  let contentStart = 0;
  let emptied = 0;

  function keep(slice: Uint8Array): void {
    if (slice.length === 0) return;
    kept.push(slice);
    keptBytes += slice.length;
  }
  function truncate(to: number): void {
    while (keptBytes > to) {
      const last = kept.pop();
      if (!last) return;
      keptBytes -= last.length;
      if (keptBytes < to) {
        kept.push(last.subarray(0, to - keptBytes));
        keptBytes = to;
      }
    }
  }

  return {
    push(chunk) {
      // chunk[at, i) is kept, not yet pushed to `kept`.
      let at = 0;
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i];
        if (!inString) {
          if (byte === QUOTE) {
            inString = true;
            length = 0;
            contentStart = keptBytes + (i + 1 - at);
          }
          continue;
        }
        if (escaped) escaped = false;
        else if (byte === BACKSLASH) escaped = true;
        else if (byte === QUOTE) {
          inString = false;
          if (dropping) {
            dropping = false;
            at = i;
          }
          continue;
        }
        length++;
        if (dropping) {
          at = i + 1;
        } else if (length > limit) {
          dropping = true;
          emptied++;
          keep(chunk.subarray(at, i));
          truncate(contentStart);
          at = i + 1;
        }
      }
      keep(chunk.subarray(at));
    },
    result() {
      return Buffer.concat(kept, keptBytes);
    },
    get emptied() {
      return emptied;
    },
  };
}
