import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const noSdkOrDriver = {
  patterns: [
    {
      group: ['@modelcontextprotocol/*'],
      message: 'Only src/mcp, src/server and src/client import the MCP SDK.',
    },
    { group: ['better-sqlite3', 'pg', 'postgres'], message: 'Drivers are imported only by src/adapters.' },
  ],
};

export default tseslint.config(
  { ignores: ['dist/**', 'dist-bench/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/core/**', 'src/store/**', 'src/executor/**'],
    rules: {
      'no-restricted-imports': ['error', noSdkOrDriver],
      'no-restricted-properties': [
        'error',
        { object: 'Date', property: 'now', message: 'Use the injected Clock.' },
      ],
    },
  },
  {
    files: ['src/**'],
    rules: { 'no-console': 'error' },
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
