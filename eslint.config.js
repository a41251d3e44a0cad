import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import roomsPlugin from './scripts/eslint-rooms.mjs';

const anySdk = {
  group: ['@modelcontextprotocol/*'],
  message: 'Only src/mcp (register-*.ts; v1/ for SDK 1.x), src/server and src/client import the MCP SDK.',
};
const driver = {
  group: ['better-sqlite3', 'pg', 'postgres'],
  message: 'Drivers are imported only by src/adapters.',
};
const noSdkOrDriver = { patterns: [anySdk, driver] };
// On Node 20 a composite signal holds its sources weakly: a timeout inside AbortSignal.any that
// nothing else holds is collected and never fires. One helper owns its timer instead.
const gcSafeTimeouts = [
  {
    object: 'AbortSignal',
    property: 'any',
    message:
      'Use timeoutSignal (src/core/timeout-signal.ts): AbortSignal.any may lose its sources to the GC.',
  },
  {
    object: 'AbortSignal',
    property: 'timeout',
    message: 'Use timeoutSignal (src/core/timeout-signal.ts): it holds its timer and can be disposed.',
  },
];
const sdkV1 = {
  group: ['@modelcontextprotocol/sdk', '@modelcontextprotocol/sdk/*'],
  message: 'SDK 1.x is imported only by src/mcp/v1 (idem/mcp-v1); everything else is on SDK v2.',
};
const sdkV2 = {
  group: [
    '@modelcontextprotocol/server',
    '@modelcontextprotocol/server/*',
    '@modelcontextprotocol/client',
    '@modelcontextprotocol/client/*',
    '@modelcontextprotocol/node',
  ],
  message: 'src/mcp/v1 registers on SDK 1.x; it shares only the SDK-independent core with idem/mcp.',
};

/** Each agent framework's packages, by the folder of src/frameworks that alone may import them. */
const FRAMEWORKS = {
  'ai-sdk': ['ai', 'ai/*', '@ai-sdk/*'],
  'openai-agents': ['@openai/agents', '@openai/agents-*', '@openai/agents/*'],
  langchain: ['@langchain/*', 'langchain', 'langchain/*'],
  mastra: ['@mastra/*'],
};
/** The import patterns every folder of src/frameworks but `own` must not use. */
function frameworksBut(own) {
  return Object.entries(FRAMEWORKS)
    .filter(([name]) => name !== own)
    .map(([name, group]) => ({ group, message: `Only src/frameworks/${name} imports this framework.` }));
}

export default tseslint.config(
  {
    ignores: [
      'packages/*/dist/**',
      'dist-bench/**',
      'dist-examples/**',
      'examples/xmcp/dist/**',
      'examples/xmcp/.xmcp/**',
      'examples/xmcp/node_modules/**',
      'examples/xmcp/xmcp-env.d.ts',
      'node_modules/**',
      'coverage/**',
      '.tmp/**',
      'bench/results/**',
      'examples/prisma/generated/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['packages/*/src/**'],
    rules: { 'no-restricted-properties': ['error', ...gcSafeTimeouts] },
  },
  {
    // Rule options replace earlier ones: this list repeats gcSafeTimeouts.
    files: ['packages/idem/src/core/**', 'packages/idem/src/ports/**', 'packages/idem/src/executor/**'],
    rules: {
      'no-restricted-imports': ['error', noSdkOrDriver],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Use the injected Clock.' },
        ...gcSafeTimeouts,
      ],
    },
  },
  {
    // The library outside src/mcp and src/client, and the MCP core that idem/mcp and idem/mcp-v1 share.
    files: [
      'packages/idem/src/adapters/**',
      'packages/idem/src/operations/**',
      'packages/idem/src/testing/**',
      'packages/idem/src/index.ts',
      'packages/idem/src/mcp/*.ts',
      'packages/idem/src/commands/**',
    ],
    ignores: [
      'packages/idem/src/mcp/register-*.ts',
      'packages/idem/src/mcp/index.ts',
      'packages/idem/src/commands/register-*.ts',
      'packages/idem/src/commands/index.ts',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [anySdk] }] },
  },
  {
    files: [
      'packages/idem/src/mcp/register-*.ts',
      'packages/idem/src/mcp/index.ts',
      'packages/idem/src/commands/register-*.ts',
      'packages/idem/src/commands/index.ts',
      'packages/idem/src/mcp/oauth/**',
      'packages/idem-cli/src/server/**',
      'packages/idem/src/client/**',
      'packages/idem-cli/src/cli/**',
    ],
    rules: { 'no-restricted-imports': ['error', { patterns: [sdkV1] }] },
  },
  {
    // The agent-framework adapters (idem/ai-sdk, …): the SDK v2 client (through src/client), no
    // driver, and each adapter only its own framework; the part they share imports none.
    files: ['packages/idem/src/frameworks/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [sdkV1, driver, ...frameworksBut('none')] }],
    },
  },
  {
    files: ['packages/idem/src/frameworks/openai-agents/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [sdkV1, driver, ...frameworksBut('openai-agents')] }],
    },
  },
  {
    files: ['packages/idem/src/frameworks/langchain/**'],
    rules: {
      'no-restricted-imports': ['error', { patterns: [sdkV1, driver, ...frameworksBut('langchain')] }],
    },
  },
  {
    files: ['packages/idem/src/frameworks/ai-sdk/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [sdkV1, driver, ...frameworksBut('ai-sdk')] }] },
  },
  {
    files: ['packages/idem/src/mcp/v1/**'],
    rules: { 'no-restricted-imports': ['error', { patterns: [sdkV2] }] },
  },
  {
    files: ['packages/*/src/**'],
    rules: { 'no-console': 'error' },
  },
  {
    // Each package imports only its own files by path; the applications import the library by its
    // name (idem, idem/<entry>), and the CLI alone imports the other two applications. See
    // scripts/eslint-rooms.mjs.
    files: ['packages/*/src/**/*.ts'],
    plugins: { idem: roomsPlugin },
    rules: { 'idem/rooms': 'error' },
  },
  {
    files: ['test/**'],
    rules: {
      'no-restricted-properties': [
        'error',
        { object: 'it', property: 'only' },
        { object: 'it', property: 'skip' },
        { object: 'describe', property: 'only' },
        { object: 'test', property: 'only' },
        { object: 'test', property: 'skip' },
      ],
    },
  },
);
