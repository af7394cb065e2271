// Issues and their comments: the app's one comment per pull request (edited in place),
// reactions to a command, and the issue a nightly run keeps up to date.
import { z } from "zod";
import { fitTitle } from "../limits.js";
import { type AreaContext, fit } from "./common.js";

export type Reaction = "+1" | "rocket" | "eyes" | "confused";

export interface IssuesApi {
  addReaction(commentId: number, content: Reaction): Promise<void>;
  createComment(issue: number, body: string): Promise<void>;
  /**
   * Edits the app's own comment that holds `marker` (by the app's login, not any bot's), or
   * creates one; duplicates from a race with another instance are deleted.
   */
  upsertComment(issue: number, marker: string, body: string): Promise<void>;
  /** Edits the open issue labelled `label` whose body holds `marker`, or opens one. */
  upsertIssue(marker: string, label: string, title: string, body: string): Promise<number>;
}

const commentSchema = z.object({
  id: z.number().int(),
  body: z.string().nullable().optional(),
  user: z.object({ type: z.string(), login: z.string().optional() }).nullable(),
});

// Edits of one PR's comment in this process, one at a time (two jobs finishing together).
const commentLocks = new Map<string, Promise<unknown>>();

async function withLock<T>(key: string, work: () => Promise<T>): Promise<T> {
  const before = commentLocks.get(key) ?? Promise.resolve();
  const run = before.then(work, work);
  const settled = run.catch(() => undefined);
  commentLocks.set(key, settled);
  try {
    return await run;
  } finally {
    if (commentLocks.get(key) === settled) commentLocks.delete(key);
  }
}

export function createIssues({
  octokit,
  base,
  owner,
  name,
  identity,
  call,
}: AreaContext): IssuesApi {
  return {
    async addReaction(commentId, content) {
      await call("add a reaction", () =>
        octokit.rest.reactions.createForIssueComment({ ...base, comment_id: commentId, content }),
      );
    },
    async createComment(issue, body) {
      await call(`comment on #${issue}`, () =>
        octokit.rest.issues.createComment({ ...base, issue_number: issue, body: fit(body) }),
      );
    },
    async upsertComment(issue, marker, text) {
      // The marker leads the body (the report's renderer puts it first): trimming keeps it.
      const body = fit(text);
      await withLock(`${owner}/${name}#${issue}`, async () => {
        const login = await identity.login();
        const ours = async () =>
          z
            .array(commentSchema)
            .parse(
              await call(`list the comments of #${issue}`, () =>
                octokit.paginate(octokit.rest.issues.listComments, {
                  ...base,
                  issue_number: issue,
                  per_page: 100,
                }),
              ),
            )
            .filter(
              (comment) =>
                comment.user?.type === "Bot" &&
                (login === undefined || comment.user.login === login) &&
                comment.body?.includes(marker) === true,
            )
            .sort((a, b) => a.id - b.id);
        const found = (await ours())[0];
        if (found) {
          await call("edit the comment", () =>
            octokit.rest.issues.updateComment({ ...base, comment_id: found.id, body }),
          );
          return;
        }
        await call(`comment on #${issue}`, () =>
          octokit.rest.issues.createComment({ ...base, issue_number: issue, body }),
        );
        // Another instance (or a retried request) may have created one at the same moment:
        // the oldest stays, the others go, so the PR keeps one comment.
        const all = await ours();
        for (const extra of all.slice(1)) {
          await call("delete a duplicate comment", () =>
            octokit.rest.issues.deleteComment({ ...base, comment_id: extra.id }),
          );
        }
        const kept = all[0];
        if (all.length > 1 && kept)
          await call("edit the comment", () =>
            octokit.rest.issues.updateComment({ ...base, comment_id: kept.id, body }),
          );
      });
    },
    async upsertIssue(marker, label, title, body) {
      const { data } = await call(`list the issues labelled ${label}`, () =>
        octokit.rest.issues.listForRepo({ ...base, labels: label, state: "open", per_page: 100 }),
      );
      const ours = z
        .array(z.object({ number: z.number().int(), body: z.string().nullable().optional() }))
        .parse(data)
        .find((issue) => issue.body?.includes(marker) === true);
      if (ours) {
        await call(`update issue #${ours.number}`, () =>
          octokit.rest.issues.update({
            ...base,
            issue_number: ours.number,
            title: fitTitle(title),
            body: fit(body),
          }),
        );
        return ours.number;
      }
      const created = await call("open an issue", () =>
        octokit.rest.issues.create({
          ...base,
          title: fitTitle(title),
          body: fit(body),
          labels: [label],
        }),
      );
      return z.object({ number: z.number().int() }).parse(created.data).number;
    },
  };
}
