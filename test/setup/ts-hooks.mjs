// Module hooks of the test processes (registered by ts-loader.mjs): a TypeScript file is transpiled by
// esbuild, types stripped and nothing else, with its line structure kept and an inline source map, so
// that V8 coverage and stack traces map back to the source line by line.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';

export async function load(url, context, nextLoad) {
  if (!url.startsWith('file:') || !/\.(ts|mts)(\?.*)?$/.test(url)) return nextLoad(url, context);
  const path = fileURLToPath(url.split('?')[0]);
  const source = await readFile(path, 'utf8');
  const out = await transform(source, {
    loader: 'ts',
    format: 'esm',
    target: `node${process.versions.node}`,
    sourcemap: 'inline',
    sourcefile: path,
    sourcesContent: false,
  });
  return { format: 'module', source: out.code, shortCircuit: true };
}
