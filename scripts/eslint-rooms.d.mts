/** The applications in packages/idem-cli/src, and which other applications each may import. */
export declare const APPLICATION_IMPORTS: Readonly<Record<string, readonly string[]>>;
declare const plugin: { meta: { name: string }; rules: Record<string, unknown> };
export default plugin;
