// The repository itself: its default branch, its configuration file, and a person's
// permission on it (who may command the app).
import { z } from "zod";
import { ConfigFileError, fetchConfig } from "../config-file.js";
import { type AreaContext, GitHubError, statusOf } from "./common.js";

export interface RepositoryApi {
  permissionOf(login: string): Promise<string>;
  /** The repository's default branch. */
  defaultBranch(): Promise<string>;
  /**
   * `.github/evokernel.yml` from the default branch (null when there is none); a file the
   * user must fix throws ConfigFileError.
   */
  readConfig(): Promise<unknown>;
}

export function createRepository({ octokit, repo, base, call }: AreaContext): RepositoryApi {
  return {
    async permissionOf(login) {
      try {
        const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
          ...base,
          username: login,
        });
        return z.object({ permission: z.string() }).parse(data).permission;
      } catch (error) {
        // Not a collaborator at all: GitHub answers 404.
        if (statusOf(error) === 404) return "none";
        throw new GitHubError(`GitHub: permission of ${login} failed`, statusOf(error), {
          cause: error,
        });
      }
    },
    async defaultBranch() {
      const { data } = await call("read the repository", () => octokit.rest.repos.get(base));
      return z.object({ default_branch: z.string() }).parse(data).default_branch;
    },
    async readConfig() {
      // The default branch, the org's .github repository, _extends; bounded (config-file.ts).
      try {
        const config = await fetchConfig(octokit, repo);
        // An empty file, like a missing one, reads as "not configured" (the plugin's rule).
        return config === null || Object.keys(config).length === 0 ? null : config;
      } catch (error) {
        if (error instanceof ConfigFileError) throw error;
        throw new GitHubError("GitHub: read .github/evokernel.yml failed", statusOf(error), {
          cause: error,
        });
      }
    },
  };
}
