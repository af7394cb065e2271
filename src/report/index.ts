// What the app and the runner render from a review: the PR comment, the check run, the
// suggested changes and the patch. Everything here is pure (no file system, no network), so
// both sides import the same code and the snapshots hold for both.
export { renderComment, COMMENT_MARKER, COMMENT_LIMIT, type CommentLinks } from "./comment.js";
export { renderCheckRun, CHECK_RUN_LIMIT, type CheckRunOutput } from "./check-run.js";
export {
  mapSuggestions,
  hunkRanges,
  suggestionBlock,
  type LineChange,
  type SuggestionComment,
  type SuggestionMapping,
} from "./suggestions.js";
export { renderPatch, type PatchFile } from "./patch.js";
export { outcomeOf, headline, type Outcome } from "./outcome.js";
