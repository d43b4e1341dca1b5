// The purity boundary (STYLE.md habit 1) is enforced by ESLint; this proves the rule bites.
import t from 'tap';
import { ESLint } from 'eslint';

const eslint = new ESLint({ cwd: process.cwd() });

async function lint(code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: 'node/protocols/example.ts' });
  return (result?.messages ?? []).map((m) => m.ruleId ?? m.message);
}

t.test('protocol code may not import node built-ins, gRPC, level or fastify', async (t) => {
  for (const src of [
    "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;",
    "import { Level } from 'level';\nexport const f = Level;",
    "import * as grpc from '@grpc/grpc-js';\nexport const f = grpc;",
    "import Fastify from 'fastify';\nexport const f = Fastify;",
  ]) {
    t.ok((await lint(src)).includes('no-restricted-imports'), src.split('\n')[0] ?? src);
  }
});

t.test('protocol code may not read clocks or ambient randomness', async (t) => {
  t.ok((await lint('export const r = Math.random();')).includes('no-restricted-syntax'));
  t.ok((await lint('export const n = Date.now();')).includes('no-restricted-syntax'));
  t.ok((await lint('export const d = new Date();')).includes('no-restricted-syntax'));
  t.ok((await lint("export const p = process.env['X'];")).includes('no-restricted-globals'));
  t.ok((await lint('export const s = setTimeout;')).includes('no-restricted-globals'));
});

t.test('noble imports are allowed in protocol code', async (t) => {
  t.same(await lint("import { secp256k1 } from '@noble/curves/secp256k1.js';\nexport const c = secp256k1;"), []);
});
