/** Bundles `entry` for workerd into `outfile` (one ES module; `cloudflare:` and `node:` built-ins external). */
export declare function bundleForWorkerd(entry: string, outfile: string): Promise<void>;
