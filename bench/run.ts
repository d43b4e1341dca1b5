// `npm run bench [-- --json] [-- --only <file substring>] [-- --case <case substring>]`: runs every suite
// in bench/suites/, or those files; `--case` keeps the cases whose name holds the substring and the
// baselines they are measured against.
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { machine, runSuites, table, type BenchSuite } from './harness.ts';

const args = process.argv.slice(2);
if (args.includes('--help') || args.includes('-h')) {
  process.stdout.write(`usage: npm run bench [-- --json] [-- --only <file substring>] [-- --case <case substring>]
Runs the benchmarks of bench/suites/ (every suite, or the files whose name holds the substring; the baselines
always run) and prints each case's figures and its ratio to its baseline, measured in the same run, with the
machine (README.md "Tests and benchmarks"). --json prints one JSON line per suite.
`);
  process.exit(0);
}
const json = args.includes('--json');
const onlyAt = args.indexOf('--only');
const only = onlyAt >= 0 ? args[onlyAt + 1] : undefined;
const caseAt = args.indexOf('--case');
const onlyCase = caseAt >= 0 ? args[caseAt + 1] : undefined;

const dir = join(dirname(fileURLToPath(import.meta.url)), 'suites');
const files = readdirSync(dir).filter((f) => f.endsWith('.bench.ts')).sort();
const suites: BenchSuite[] = [];
for (const f of files) {
  // Baselines always run, so every ratio has its denominator from the same run.
  if (only && !f.includes(only) && !f.startsWith('baseline')) continue;
  const mod = (await import(pathToFileURL(join(dir, f)).href)) as { suite: BenchSuite };
  suites.push(mod.suite);
}
if (onlyCase) {
  const all = new Map(suites.flatMap((s) => s.cases.map((c) => [c.name, c] as const)));
  const keep = new Set<string>();
  const add = (name: string) => {
    if (keep.has(name)) return;
    keep.add(name);
    const base = all.get(name)?.baseline;
    if (base) add(base);
  };
  for (const name of all.keys()) if (name.includes(onlyCase)) add(name);
  for (const s of suites) s.cases = s.cases.filter((c) => keep.has(c.name));
  suites.splice(0, suites.length, ...suites.filter((s) => s.cases.length > 0));
}
if (!json) console.log(`# machine: ${machine()}\n`);
const results = await runSuites(suites);
if (json) for (const r of results) console.log(JSON.stringify(r));
else console.log(table(results));
