/** Bundles runner/src/cli.ts into one ESM file at `outfile`; resolves to `outfile`. */
export function bundleCli(outfile: string): Promise<string>;
/** The installed packages the CLI's bundle holds (`node_modules/…` folders, as the lock names them). */
export function cliPackages(): Promise<string[]>;
/** Bundles the GitHub App (src/app/main.ts) into one ESM file at `outfile`; resolves to `outfile`. */
export function bundleApp(outfile: string): Promise<string>;
