/** Bundles runner/src/cli.ts into one ESM file at `outfile`; resolves to `outfile`. */
export function bundleCli(outfile: string): Promise<string>;
