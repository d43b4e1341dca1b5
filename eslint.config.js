// Lint: typescript-eslint's recommended rules, the purity boundary of the protocol code (STYLE.md
// habit 1: nothing under node/protocols/ touches I/O, clocks or ambient randomness), and the import
// direction between the top-level folders (docs/architecture.md).
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

// Who may import whom. Each area is a path prefix; a file belongs to the longest prefix that matches it
// and may import its own area and the prefixes listed. common/ is the bottom and imports nothing of the
// project; core/ holds what two or more programs share and imports only common/ and the generated
// contracts; node/, coordinator/ and api/ never import each other; the SDK a customer installs imports
// only core/ and common/, and its browser package (api/sdk/browser/, bundled for browsers)
// imports nothing outside its own folder. The pure corners of core/ (codec, errors, keys, session) import only each other
// (and common/memo.ts), so protocol code that uses them stays sans-IO. tee/ (enclave attestation and the
// sealing of a tee node's storage key) imports only core/ (the attestation command computes the node's
// binding) and the AWS request signer; its verifiers, tee/attestation/, only the error model. Test,
// bench and deploy code may import anything.
export const AREAS = {
  'common/': [],
  'proto/': [],
  'core/': ['common/', 'proto/'],
  'core/errors/': [],
  'core/codec/': ['core/errors/'],
  'core/session/': ['core/codec/', 'core/errors/'],
  'core/keys/': ['core/errors/', 'common/memo.ts'],
  'node/': ['core/', 'common/', 'proto/', 'tee/'],
  'node/protocols/': ['core/codec/', 'core/errors/', 'core/keys/', 'core/session/', 'common/memo.ts'],
  'coordinator/': ['core/', 'common/', 'proto/', 'tee/attestation/'],
  'api/': ['core/', 'common/', 'proto/', 'tee/'],
  'api/sdk/': ['core/', 'common/'],
  'api/sdk/browser/': [],
  'tee/': ['core/', 'common/aws-sigv4.ts'],
  'tee/attestation/': ['core/errors/'],
};

// Imports that break the direction, each one named (`{ from, to: [...], typeOnly? }`), to be moved out
// (docs/architecture.md). `typeOnly` exceptions hold only for `import type`. None today: keep it so.
export const KNOWN_DEBT = [];

const root = import.meta.dirname;
const areaOf = (rel) => Object.keys(AREAS).filter((a) => rel.startsWith(a)).sort((a, b) => b.length - a.length)[0];

const importDirection = {
  meta: { type: 'problem', schema: [], messages: { forbidden: '{{from}} may not import {{to}} (docs/architecture.md): move what both sides need to core/' } },
  create(context) {
    const file = path.relative(root, context.filename).split(path.sep).join('/');
    const from = areaOf(file);
    if (!from) return {};
    const check = (node, source, typeOnly) => {
      if (typeof source?.value !== 'string' || !source.value.startsWith('.')) return;
      const target = path.relative(root, path.resolve(path.dirname(context.filename), source.value)).split(path.sep).join('/');
      const to = areaOf(target) ?? target.split('/')[0] + '/';
      if (target.startsWith(from) || AREAS[from].some((allowed) => target.startsWith(allowed))) return;
      const debt = KNOWN_DEBT.find((d) => d.from === file && d.to.includes(target));
      if (debt && (!debt.typeOnly || typeOnly)) return;
      context.report({ node, messageId: 'forbidden', data: { from, to } });
    };
    return {
      ImportDeclaration: (n) => check(n, n.source, n.importKind === 'type' || (n.specifiers.length > 0 && n.specifiers.every((s) => s.importKind === 'type'))),
      ExportNamedDeclaration: (n) => check(n, n.source, n.exportKind === 'type'),
      ExportAllDeclaration: (n) => check(n, n.source, n.exportKind === 'type'),
      ImportExpression: (n) => check(n, n.source, false),
    };
  },
};

const impure = [
  { group: ['node:*'], message: 'protocol code is sans-IO: no Node built-ins' },
  { group: ['fs', 'net', 'crypto', 'os', 'path', 'child_process', 'worker_threads', 'http', 'https', 'tls', 'stream', 'events', 'timers', 'util'], message: 'protocol code is sans-IO: no Node built-ins' },
  { group: ['@grpc/*', 'level', 'classic-level', 'fastify', 'fastify/*', '@fastify/*', 'pino', 'viem', 'viem/*', 'bitcoinjs-lib', 'jose'], message: 'protocol code is sans-IO: only @noble/* and @scure/* are allowed' },
  { group: ['**/runtime/**', '**/transport/**', '**/storage/**', '**/coordinator/**', '**/api/**', '**/proto/gen/**'], message: 'protocol code may not reach into I/O layers' },
];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'dist-sdk/', 'dist-browser/', 'data/', '.tap/', 'proto/gen/', 'coverage/'] },
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
    files: ['**/*.ts', '**/*.mjs'],
    plugins: { layers: { rules: { 'import-direction': importDirection } } },
    rules: { 'layers/import-direction': 'error' },
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
    // Protocol code and the pure corners of core/ it imports (see AREAS).
    files: ['node/protocols/**/*.ts', 'core/codec/**/*.ts', 'core/errors/**/*.ts', 'core/keys/**/*.ts', 'core/session/**/*.ts', 'common/memo.ts'],
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
  {
    // Errors do not choose an HTTP status (docs/architecture.md "Error model"): API code throws a
    // CustodyError with a registered code, and api/errors.ts alone maps it to a status. This refuses the
    // old pattern, an error built with a status number (`new ApiError(404, ...)`); the SDK, which reads
    // statuses off answers, and the mapping itself are exempt.
    files: ['api/**/*.ts'],
    ignores: ['api/errors.ts', 'api/sdk/**'],
    rules: {
      'no-restricted-syntax': ['error', {
        selector: ':matches(NewExpression, CallExpression)[callee.name=/Error$/] > Literal.arguments[raw=/^[1-5][0-9][0-9]$/], :matches(NewExpression, CallExpression)[callee.property.name=/Error$/] > Literal.arguments[raw=/^[1-5][0-9][0-9]$/]',
        message: 'an error does not carry an HTTP status: throw new CustodyError(code, message) and let api/errors.ts map its kind',
      }],
    },
  },
);
