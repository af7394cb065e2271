// A head commit's git trees as GitHub's git data API serves them, for strict nock: build the
// tree from files (with modes, symlinks and submodules), then mock exactly the tree and blob
// reads a walk to some paths makes. Blob SHAs are git's own, so content checks are real.
import { createHash } from "node:crypto";
import type nock from "nock";

export type HeadFile =
  string | { readonly content: string; readonly mode?: "100644" | "100755" | "120000" | "160000" };

export interface TreeEntryJson {
  readonly name: string;
  readonly mode: string;
  readonly type: string;
  readonly sha: string;
  readonly size?: number;
}

interface Node {
  readonly name: string;
  readonly mode: string;
  readonly type: "blob" | "tree" | "commit";
  readonly sha: string;
  readonly content?: string;
  readonly children?: Map<string, Node>;
}

export function gitBlobSha(content: string): string {
  const bytes = Buffer.from(content, "utf8");
  return createHash("sha1").update(`blob ${bytes.length}\0`).update(bytes).digest("hex");
}

export interface HeadTree {
  /** The same trees in memory, for the policy's own seam (no HTTP). */
  readonly source: {
    readTree(treeish: string): Promise<TreeEntryJson[]>;
    readBlob(sha: string): Promise<string>;
  };
  /** Mocks the reads of a walk from the root to each path (each tree and blob once). */
  mockWalk(
    scope: nock.Scope,
    repoPath: string,
    paths: readonly string[],
    blobs?: readonly string[],
  ): void;
}

/** `files`: path → content (a regular file) or { content, mode }. */
export function headTree(headSha: string, files: Record<string, HeadFile>): HeadTree {
  const root = new Map<string, Node>();
  for (const [path, file] of Object.entries(files)) {
    const { content, mode } =
      typeof file === "string" ? { content: file, mode: "100644" } : { mode: "100644", ...file };
    const segments = path.split("/");
    let folder = root;
    for (const segment of segments.slice(0, -1)) {
      let child = folder.get(segment);
      if (child === undefined) {
        child = { name: segment, mode: "040000", type: "tree", sha: "", children: new Map() };
        folder.set(segment, child);
      }
      if (child.children === undefined) throw new Error(`${segment} is not a folder`);
      folder = child.children;
    }
    const name = segments[segments.length - 1] ?? "";
    folder.set(name, {
      name,
      mode,
      type: mode === "160000" ? "commit" : "blob",
      sha: mode === "160000" ? "d".repeat(40) : gitBlobSha(content),
      content,
    });
  }
  const treeSha = (prefix: string) => createHash("sha1").update(`tree:${prefix}`).digest("hex");
  const entries = (folder: Map<string, Node>, prefix: string) =>
    [...folder.values()].map((node) => ({
      path: node.name,
      mode: node.mode,
      type: node.type,
      sha:
        node.type === "tree"
          ? treeSha(prefix === "" ? node.name : `${prefix}/${node.name}`)
          : node.sha,
      ...(node.type === "blob" ? { size: Buffer.byteLength(node.content ?? "") } : {}),
    }));
  const byTree = new Map<string, Map<string, Node>>();
  const treePrefix = new Map<string, string>();
  const byBlob = new Map<string, string>();
  const index = (folder: Map<string, Node>, prefix: string) => {
    const sha = prefix === "" ? headSha : treeSha(prefix);
    byTree.set(sha, folder);
    treePrefix.set(sha, prefix);
    for (const node of folder.values()) {
      const path = prefix === "" ? node.name : `${prefix}/${node.name}`;
      if (node.children) index(node.children, path);
      else if (node.content !== undefined) byBlob.set(node.sha, node.content);
    }
  };
  index(root, "");
  return {
    source: {
      readTree(treeish) {
        const folder = byTree.get(treeish);
        if (folder === undefined) return Promise.reject(new Error(`no tree ${treeish}`));
        const prefix = treePrefix.get(treeish) ?? "";
        return Promise.resolve(
          entries(folder, prefix).map(({ path, ...entry }) => ({ ...entry, name: path })),
        );
      },
      readBlob(sha) {
        const blob = byBlob.get(sha);
        return blob === undefined
          ? Promise.reject(new Error(`no blob ${sha}`))
          : Promise.resolve(blob);
      },
    },
    mockWalk(scope, repoPath, paths, blobs = []) {
      const trees = new Map<string, unknown>();
      for (const path of paths) {
        const segments = path.split("/");
        let folder: Map<string, Node> | undefined = root;
        let prefix = "";
        for (let depth = 0; depth < segments.length && folder !== undefined; depth++) {
          trees.set(prefix === "" ? headSha : treeSha(prefix), { tree: entries(folder, prefix) });
          const node: Node | undefined = folder.get(segments[depth] ?? "");
          if (node === undefined || node.type !== "tree" || node.mode !== "040000") break;
          folder = node.children;
          prefix = prefix === "" ? node.name : `${prefix}/${node.name}`;
        }
      }
      for (const [sha, body] of trees)
        scope.get(`${repoPath}/git/trees/${sha}`).reply(200, body as nock.Body);
      for (const path of blobs) {
        const content = files[path];
        if (content === undefined) throw new Error(`no file ${path}`);
        const text = typeof content === "string" ? content : content.content;
        scope
          .get(`${repoPath}/git/blobs/${gitBlobSha(text)}`)
          .reply(200, { content: Buffer.from(text).toString("base64"), encoding: "base64" });
      }
    },
  };
}
