// Lint: typescript-eslint's recommended rules, plus the purity boundary of the protocol code
// (STYLE.md habit 1): nothing under node/protocols/ touches I/O, clocks or ambient randomness.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const impure = [
  { group: ['node:*'], message: 'protocol code is sans-IO: no Node built-ins' },
  { group: ['fs', 'net', 'crypto', 'os', 'path', 'child_process', 'worker_threads', 'http', 'https', 'tls', 'stream', 'events', 'timers', 'util'], message: 'protocol code is sans-IO: no Node built-ins' },
  { group: ['@grpc/*', 'level', 'classic-level', 'fastify', 'fastify/*', '@fastify/*', 'pino', 'viem', 'viem/*', 'bitcoinjs-lib', 'jose'], message: 'protocol code is sans-IO: only @noble/* and @scure/* are allowed' },
  { group: ['**/runtime/**', '**/transport/**', '**/storage/**', '**/coordinator/**', '**/api/**', '**/proto/gen/**'], message: 'protocol code may not reach into I/O layers' },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', '.tap/', 'proto/gen/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-properties': ['error', { object: 'process', property: 'env', message: 'read the environment only in a config.ts (STYLE.md habit 8)' }],
    },
  },
  {
    files: ['**/config.ts', 'deploy/**', 'test/**', 'bench/**', '**/*.mjs'],
    rules: { 'no-restricted-properties': 'off' },
  },
  {
    // Plain Node scripts: the globals are Node's; TypeScript checks the .ts files instead.
    files: ['**/*.mjs'],
    rules: { 'no-undef': 'off' },
  },
  {
    files: ['node/protocols/**/*.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: impure }],
      'no-restricted-globals': ['error',
        { name: 'process', message: 'protocol code is sans-IO' },
        { name: 'setTimeout', message: 'protocol code has no clock' },
        { name: 'setInterval', message: 'protocol code has no clock' },
        { name: 'performance', message: 'protocol code has no clock' },
        { name: 'fetch', message: 'protocol code is sans-IO' },
        { name: 'console', message: 'protocol code does not log' },
        { name: 'Buffer', message: 'use Uint8Array in protocol code' },
      ],
      'no-restricted-syntax': ['error',
        { selector: "MemberExpression[object.name='Math'][property.name='random']", message: 'randomness is injected into protocols' },
        { selector: "MemberExpression[object.name='Date']", message: 'protocol code has no clock' },
        { selector: "NewExpression[callee.name='Date']", message: 'protocol code has no clock' },
        { selector: "MemberExpression[object.name='crypto'][property.name='getRandomValues']", message: 'randomness is injected into protocols' },
        { selector: "CallExpression[callee.name='randomBytes']", message: 'randomness is injected into protocols' },
      ],
    },
  },
);
