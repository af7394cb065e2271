// Built libraries out of candidates' reach. The build cache is writable inside the sandbox
// (builds write it, a load_inline writes it), so the code of one candidate, run at its
// verification (an evk kernel's host code, an extension's initialiser), could rewrite another
// candidate's library there: the base branch's kernel made slower before it is timed, and the
// pull request's reported faster than it is. A built library (.so of an evk or torch-ext
// candidate) is therefore copied, as soon as its build is reported, into a folder every sandbox
// is shown read-only (sandbox.ts sealedDir), and verification and timing load that copy.
//
// Not covered: a Python candidate's artifact is its source's copy in the cache, beside the
// extension build a load_inline finds there (apply_extension_env); it is loaded in place.
import { chmod, copyFile, lstat, mkdir, realpath, rename } from "node:fs/promises";
import { basename, join, sep } from "node:path";
import type { BuildRecord } from "#shared/contract/records.js";
import { sealedDir } from "../sandbox/sandbox.js";

/** The build record with its library sealed (a failed record, saying why, where it cannot be). */
export async function sealBuild(record: BuildRecord, cache: string): Promise<BuildRecord> {
  if (!record.ok || record.artifact === null || record.format === "py") return record;
  const refuse = (why: string): BuildRecord => ({
    ...record,
    ok: false,
    artifact: null,
    log: `${record.log}\nevokernel: the build's library was refused: ${why}`,
  });
  if (!/^[0-9a-f]{24,}$/.test(record.hash))
    return refuse(`its hash ${record.hash} is not a content hash`);
  let artifact: string;
  let root: string;
  try {
    [artifact, root] = await Promise.all([realpath(record.artifact), realpath(cache)]);
  } catch (error) {
    return refuse(`${record.artifact} cannot be read (${String(error)})`);
  }
  // The harness names the library; code that ran in the build's process could name another
  // file (a key, another candidate's library): only a plain file of this build's own entry.
  const key = record.hash.slice(0, 24); // the harness's folder for it (build.py out_dir)
  const entry = join(root, key) + sep;
  if (!artifact.startsWith(entry))
    return refuse(`${record.artifact} is not in its build's folder ${entry}`);
  if (!(await lstat(artifact)).isFile()) return refuse(`${record.artifact} is not a plain file`);
  const folder = join(sealedDir(), key);
  const sealed = join(folder, basename(artifact));
  // Sealed once a run: a later build of the same content (cached) finds the first copy, made
  // before any other candidate of the run could have rewritten the cache's.
  const already = await lstat(sealed).catch(() => null);
  if (already?.isFile()) return { ...record, artifact: sealed };
  await mkdir(folder, { recursive: true, mode: 0o755 });
  const partial = `${sealed}.${String(process.pid)}.partial`;
  await copyFile(artifact, partial);
  await chmod(partial, 0o444);
  await rename(partial, sealed);
  return { ...record, artifact: sealed };
}
