// `npm run bench [-- --json] [-- --only <substring>]`: runs every suite in bench/suites/.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { machine, runSuites, table, type BenchSuite } from './harness.ts';

const args = process.argv.slice(2);
const json = args.includes('--json');
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined;

const dir = join(dirname(fileURLToPath(import.meta.url)), 'suites');
const files = readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort();
const suites: BenchSuite[] = [];
for (const f of files) {
  // Baselines always run, so every ratio has its denominator from the same run.
  if (only && !f.includes(only) && !f.startsWith('baseline')) continue;
  const mod = (await import(pathToFileURL(join(dir, f)).href)) as { suite: BenchSuite };
  suites.push(mod.suite);
}
if (!json) console.log(`# machine: ${machine()}\n`);
const results = await runSuites(suites);
if (json) for (const r of results) console.log(JSON.stringify(r));
else console.log(table(results));
