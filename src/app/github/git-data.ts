// Git data (refs, trees, blobs, commits) and the files of a branch: the state branch's reads
// and compare-and-swap writes, a suggestion's commit, and resolving a commit name.
import { z } from "zod";
import { type AreaContext, GitHubError, shaOf, statusOf } from "./common.js";

/** One entry of a git tree: mode 100644 a file, 100755 an executable, 120000 a symlink, 040000 a folder, 160000 a submodule. */
export interface TreeEntry {
  readonly name: string;
  readonly mode: string;
  readonly type: string;
  readonly sha: string;
  /** Bytes, for a blob. */
  readonly size?: number;
}

/**
 * A file of a commit writeBranchFiles makes: its text, a blob already in the repository, or
 * (`tree`) a whole folder already in it, carried over as it is.
 */
export type BranchFile =
  | { readonly path: string; readonly content: string }
  | { readonly path: string; readonly sha: string; readonly tree?: boolean };

export interface GitDataApi {
  /** The commit a branch points at, or undefined when there is no such branch. */
  branchHead(branch: string): Promise<string | undefined>;
  /** Moves a branch to `sha` only if that is a fast-forward; false when it is not. */
  fastForward(branch: string, sha: string): Promise<boolean>;
  /** A commit of `files` on top of `parentSha`, pushed to `branch` (created or moved). */
  commitFiles(
    branch: string,
    parentSha: string,
    files: readonly { path: string; content: string }[],
    message: string,
  ): Promise<string>;
  /** One tree's entries, not recursive; a commit SHA reads its root tree. */
  readTree(treeish: string): Promise<TreeEntry[]>;
  /** A blob's content as UTF-8 text. */
  readBlob(sha: string): Promise<string>;
  /**
   * The full SHA GitHub resolves a commit name (a hex prefix) to, or undefined when it finds
   * no such commit or the prefix is ambiguous.
   */
  resolveCommit(name: string): Promise<string | undefined>;
  /**
   * `path` in the commit `branch` points at (text undefined when the commit has no such
   * file), or undefined when there is no such branch.
   */
  readBranchFile(
    branch: string,
    path: string,
  ): Promise<{ commit: string; text: string | undefined } | undefined>;
  /**
   * A commit whose tree is exactly `files` (a text, or a blob already in the repository),
   * on `parent`, and `branch` moved to it only as a fast-forward from `parent` (created when
   * `parent` is undefined): a compare-and-swap. The commit, or undefined when another writer
   * moved or created the branch first (GitHub's 422).
   */
  writeBranchFiles(
    branch: string,
    parent: string | undefined,
    files: readonly BranchFile[],
    message: string,
  ): Promise<string | undefined>;
}

export function createGitData({ octokit, base, call }: AreaContext): GitDataApi {
  async function branchHead(branch: string): Promise<string | undefined> {
    try {
      const { data } = await octokit.rest.git.getRef({ ...base, ref: `heads/${branch}` });
      return z.object({ object: z.object({ sha: z.string() }) }).parse(data).object.sha;
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new GitHubError(`GitHub: read ${branch} failed`, statusOf(error), { cause: error });
    }
  }

  return {
    branchHead,
    async fastForward(branch, sha) {
      try {
        await octokit.rest.git.updateRef({ ...base, ref: `heads/${branch}`, sha, force: false });
        return true;
      } catch (error) {
        if (statusOf(error) === 422) return false;
        throw new GitHubError(`GitHub: move ${branch} failed`, statusOf(error), { cause: error });
      }
    },
    async commitFiles(branch, parentSha, files, message) {
      const parent = await call("read the parent commit", () =>
        octokit.rest.git.getCommit({ ...base, commit_sha: parentSha }),
      );
      const baseTree = z.object({ tree: z.object({ sha: z.string() }) }).parse(parent.data)
        .tree.sha;
      const tree: { path: string; mode: "100644"; type: "blob"; sha: string }[] = [];
      for (const file of files) {
        const blob = await call(`create a blob for ${file.path}`, () =>
          octokit.rest.git.createBlob({ ...base, content: file.content, encoding: "utf-8" }),
        );
        tree.push({
          path: file.path,
          mode: "100644" as const,
          type: "blob" as const,
          sha: shaOf(blob.data),
        });
      }
      const newTree = await call("create a tree", () =>
        octokit.rest.git.createTree({ ...base, base_tree: baseTree, tree }),
      );
      const commit = await call("create a commit", () =>
        octokit.rest.git.createCommit({
          ...base,
          message,
          tree: shaOf(newTree.data),
          parents: [parentSha],
        }),
      );
      const commitSha = shaOf(commit.data);
      try {
        await octokit.rest.git.createRef({ ...base, ref: `refs/heads/${branch}`, sha: commitSha });
      } catch (error) {
        // 422: the branch exists (an earlier job on this commit): move it.
        if (statusOf(error) !== 422)
          throw new GitHubError(`GitHub: create ${branch} failed`, statusOf(error), {
            cause: error,
          });
        await call(`move ${branch}`, () =>
          octokit.rest.git.updateRef({
            ...base,
            ref: `heads/${branch}`,
            sha: commitSha,
            force: true,
          }),
        );
      }
      return commitSha;
    },
    async readTree(treeish) {
      const { data } = await call(`read the tree ${treeish}`, () =>
        octokit.rest.git.getTree({ ...base, tree_sha: treeish }),
      );
      return z
        .object({
          tree: z.array(
            z.object({
              path: z.string(),
              mode: z.string(),
              type: z.string(),
              sha: z.string(),
              size: z.number().int().nonnegative().optional(),
            }),
          ),
        })
        .parse(data)
        .tree.map((entry) => ({
          name: entry.path,
          mode: entry.mode,
          type: entry.type,
          sha: entry.sha,
          ...(entry.size === undefined ? {} : { size: entry.size }),
        }));
    },
    async readBlob(sha) {
      const { data } = await call(`read the blob ${sha}`, () =>
        octokit.rest.git.getBlob({ ...base, file_sha: sha }),
      );
      const blob = z.object({ content: z.string(), encoding: z.string() }).parse(data);
      if (blob.encoding !== "base64" && blob.encoding !== "utf-8")
        throw new GitHubError(`GitHub: blob ${sha} came in ${blob.encoding}`, undefined, {
          cause: undefined,
        });
      return blob.encoding === "base64"
        ? Buffer.from(blob.content, "base64").toString("utf8")
        : blob.content;
    },
    async resolveCommit(name) {
      try {
        // The sha media type answers the full SHA as plain text, without the commit's diff.
        const { data } = await octokit.rest.repos.getCommit({
          ...base,
          ref: name,
          mediaType: { format: "sha" },
        });
        const sha = z.string().trim().parse(data).toLowerCase();
        return /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(sha) ? sha : undefined;
      } catch (error) {
        // 404: no such commit; 422: not a commit name GitHub can resolve (ambiguous, say).
        const status = statusOf(error);
        if (status === 404 || status === 422) return undefined;
        throw new GitHubError(`GitHub: resolve commit ${name} failed`, status, { cause: error });
      }
    },
    async readBranchFile(branch, path) {
      const commit = await branchHead(branch);
      if (commit === undefined) return undefined;
      try {
        const { data } = await octokit.rest.repos.getContent({ ...base, path, ref: commit });
        const file = z.object({ content: z.string(), encoding: z.literal("base64") }).parse(data);
        return { commit, text: Buffer.from(file.content, "base64").toString("utf8") };
      } catch (error) {
        if (statusOf(error) === 404) return { commit, text: undefined };
        throw new GitHubError(`GitHub: read ${path} on ${branch} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async writeBranchFiles(branch, parent, files, message) {
      const tree = await call("create a tree", () =>
        octokit.rest.git.createTree({
          ...base,
          tree: files.map((file) =>
            "sha" in file
              ? file.tree === true
                ? { path: file.path, mode: "040000" as const, type: "tree" as const, sha: file.sha }
                : { path: file.path, mode: "100644" as const, type: "blob" as const, sha: file.sha }
              : {
                  path: file.path,
                  mode: "100644" as const,
                  type: "blob" as const,
                  content: file.content,
                },
          ),
        }),
      );
      const commit = await call("create a commit", () =>
        octokit.rest.git.createCommit({
          ...base,
          message,
          tree: shaOf(tree.data),
          parents: parent === undefined ? [] : [parent],
        }),
      );
      const sha = shaOf(commit.data);
      try {
        if (parent === undefined)
          await octokit.rest.git.createRef({ ...base, ref: `refs/heads/${branch}`, sha });
        // Not forced: a writer that moved the branch in between makes this fail, not vanish.
        else
          await octokit.rest.git.updateRef({ ...base, ref: `heads/${branch}`, sha, force: false });
      } catch (error) {
        if (statusOf(error) === 422) return undefined;
        throw new GitHubError(`GitHub: move ${branch} failed`, statusOf(error), { cause: error });
      }
      return sha;
    },
  };
}
