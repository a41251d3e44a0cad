import type { XmcpConfig } from 'xmcp';

const config: XmcpConfig = {
  // Read when `xmcp build` runs: the built server listens there.
  http: { host: '127.0.0.1', port: Number(process.env.PORT ?? 3002), endpoint: '/mcp' },
  paths: { tools: 'src/tools', prompts: false, resources: false },
  bundler: (rspack: { externals?: unknown; resolve?: Record<string, unknown> }) => ({
    ...rspack,
    // better-sqlite3 is a native module: loaded from node_modules at run time, never bundled.
    externals: [rspack.externals ?? []].flat().concat({ 'better-sqlite3': 'node-commonjs better-sqlite3' }),
    // ESM imports name the .js file that a .ts file becomes.
    resolve: { ...rspack.resolve, extensionAlias: { '.js': ['.ts', '.js'] } },
  }),
};
export default config;
