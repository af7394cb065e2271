/** Bundles runner/src/cli.ts into one ESM file at `outfile`; resolves to `outfile`. */
export function bundleCli(outfile: string): Promise<string>;
/** Bundles the GitHub App (src/app/main.ts) into one ESM file at `outfile`; resolves to `outfile`. */
export function bundleApp(outfile: string): Promise<string>;
