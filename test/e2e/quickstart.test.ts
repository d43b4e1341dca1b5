// docs/quickstart.md, run as written: `npm start` (the launcher, with its build, anvil, the regtest
// service, coordinator, three nodes and the API) on free ports in a temporary data directory, then every
// ```sh block under "## Steps" in one bash session, in order; each step's output must match the ```json
// block shown after it (every key shown, with its value; `…` matches any text). Only ports and the
// data and work directories are rewritten.
import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../cluster/cluster-harness.ts';
import { PROGRAM_LAUNCHER, untracked } from '../support/program.ts';
import { infrastructureAddresses } from '../../api/tokenization/chain/safe-infrastructure.ts';

t.setTimeout(600_000);
const root = fileURLToPath(new URL('../../', import.meta.url));
const doc = readFileSync(join(root, 'docs/quickstart.md'), 'utf8');

interface Step { title: string; sh: string; expect?: unknown }

/** The steps: each `### ` heading after "## Steps", its ```sh block and the ```json block after it. */
function steps(markdown: string): Step[] {
  const body = markdown.slice(markdown.indexOf('\n## Steps'));
  return body.split('\n### ').slice(1).map((section) => {
    const title = section.split('\n')[0]!;
    const blocks = [...section.matchAll(/```(\w+)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1]!, text: m[2]! }));
    const sh = blocks.find((b) => b.lang === 'sh');
    if (!sh) throw new Error(`step "${title}" has no sh block`);
    const json = blocks.slice(blocks.indexOf(sh) + 1).find((b) => b.lang === 'json');
    return { title, sh: sh.text, ...(json ? { expect: JSON.parse(json.text) as unknown } : {}) };
  });
}

/** Every key of `want` is in `got` with its value; a string with `…` is a pattern. */
function matches(got: unknown, want: unknown, at = '$'): string[] {
  if (typeof want === 'string' && want.includes('…')) {
    const re = new RegExp('^' + want.split('…').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('[\\s\\S]*') + '$');
    return typeof got === 'string' && re.test(got) ? [] : [`${at}: ${JSON.stringify(got)} does not match ${JSON.stringify(want)}`];
  }
  if (Array.isArray(want)) return Array.isArray(got) && got.length === want.length ? want.flatMap((w, i) => matches(got[i], w, `${at}[${i}]`)) : [`${at}: ${JSON.stringify(got)} is not ${JSON.stringify(want)}`];
  if (want && typeof want === 'object') {
    if (!got || typeof got !== 'object') return [`${at}: ${JSON.stringify(got)} is not an object`];
    return Object.entries(want).flatMap(([k, w]) => (k in got ? matches((got as Record<string, unknown>)[k], w, `${at}.${k}`) : [`${at}.${k} is missing`]));
  }
  return got === want ? [] : [`${at}: ${JSON.stringify(got)} is not ${JSON.stringify(want)}`];
}

/** The last JSON value a step printed: a whole pretty-printed document, else its last line. */
function lastJson(out: string): unknown {
  const text = out.trim();
  try {
    return JSON.parse(text);
  } catch {
    const start = text.lastIndexOf('\n{');
    return JSON.parse(start >= 0 ? text.slice(start + 1) : text.split('\n').at(-1)!);
  }
}

t.test('docs/quickstart.md works as written, step by step, against npm start', async (t) => {
  const all = steps(doc);
  t.ok(all.length >= 8, `${all.length} steps`);
  const tmp = mkdtempSync(join(tmpdir(), 'quickstart-'));
  const data = join(tmp, 'data');
  const work = join(tmp, 'work');
  const ports = { api: await freePort(), coordinator: await freePort(), anvil: await freePort(), regtest: await freePort(), hook: await freePort() };
  const rewrite = (s: string) => s
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.api}`)
    .replaceAll('127.0.0.1:9000', `127.0.0.1:${ports.hook}`).replaceAll('--port 9000', `--port ${ports.hook}`)
    .replaceAll('./quickstart/', `${work}/`).replaceAll('quickstart/', `${work}/`).replaceAll('mkdir -p quickstart', `mkdir -p ${work}`)
    .replaceAll('data/operator', `${data}/operator`);

  const env = {
    ...process.env, DATA_DIR: data, API_PORT: String(ports.api), COORDINATOR_PORT: String(ports.coordinator), ANVIL_PORT: String(ports.anvil),
    REGTEST_PORT: String(ports.regtest), ANVIL_URL: `http://127.0.0.1:${ports.anvil}`, REGTEST_URL: `http://127.0.0.1:${ports.regtest}`,
  };
  // Step 1: npm start, in its own process group so that stopping it stops everything it started.
  let log = '';
  const start: ChildProcess = spawn(PROGRAM_LAUNCHER, untracked(process.execPath, ['deploy/local/start.mjs']), { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  start.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  start.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  t.teardown(async () => {
    try {
      process.kill(-start.pid!, 'SIGINT');
    } catch {
      // already gone
    }
    await new Promise((r) => setTimeout(r, 1500));
    try {
      process.kill(-start.pid!, 'SIGKILL');
    } catch {
      // stopped
    }
    rmSync(tmp, { recursive: true, force: true });
  });
  const deadline = Date.now() + 300_000;
  for (;;) {
    const ready = await fetch(`http://127.0.0.1:${ports.api}/readyz`).then((r) => r.json() as Promise<{ status?: string; node_count?: number }>, () => undefined);
    if (ready?.status === 'ready' && ready.node_count === 3) break;
    if (start.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not become ready:\n${log.slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 1000));
  }
  t.match(log, /\[start\] API on http:\/\/127\.0\.0\.1:(\d+) \(readiness: \/readyz; API reference: http:\/\/127\.0\.0\.1:\1\/docs\); CLI: CUSTODY_URL=http:\/\/127\.0\.0\.1:\1;/, 'npm start prints the start-up lines step 1 shows, with the API reference and the CLI origin');
  t.match(log, /\[start\] operator tasks on the running API: API_OPERATOR_API_URL=/);
  // Tokenization is ready on the local anvil (docs/platform/tokenization.md "Who pays"): the shared Safe
  // infrastructure is at its CREATE2 addresses.
  t.match(log, /\[start\] Safe 1\.4\.1 infrastructure and forwarder deployed on evm-local/, 'npm start deploys the Safe infrastructure');
  const codeAt = async (address: string) => ((await (await fetch(`http://127.0.0.1:${ports.anvil}`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_getCode', params: [address, 'latest'] }),
  })).json()) as { result: string }).result;
  for (const [name, address] of Object.entries(infrastructureAddresses())) t.not(await codeAt(address), '0x', `${name} deployed at ${address}`);

  // Steps 2…: one bash session, each step's output in its own file.
  const script = ['set -euo pipefail', `cd ${JSON.stringify(root)}`, ...all.map((s, i) => `{\n${rewrite(s.sh)}\n} > ${work}.step${i}.out 2> ${work}.step${i}.err`)].join('\n');
  writeFileSync(join(tmp, 'steps.sh'), script);
  const bash = spawn(PROGRAM_LAUNCHER, untracked('bash', [join(tmp, 'steps.sh')]), { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let bashErr = '';
  bash.stderr.on('data', (d: Buffer) => (bashErr += d.toString()));
  const code = await new Promise<number | null>((resolve) => bash.on('close', resolve));
  const out = (i: number, kind: 'out' | 'err') => (existsSync(`${work}.step${i}.${kind}`) ? readFileSync(`${work}.step${i}.${kind}`, 'utf8') : '');
  const ran = all.findIndex((_, i) => !existsSync(`${work}.step${i}.out`));
  t.equal(code, 0, `every step ran${code === 0 ? '' : `; it stopped at "${all[(ran < 0 ? all.length : ran) - 1]?.title}": ${out((ran < 0 ? all.length : ran) - 1, 'err').slice(-1500)} ${bashErr.slice(-500)}`}`);
  all.forEach((s, i) => {
    if (s.expect === undefined) return;
    let got: unknown;
    try {
      got = lastJson(out(i, 'out'));
    } catch {
      t.fail(`step "${s.title}" printed no JSON: ${out(i, 'out').slice(-500)} ${out(i, 'err').slice(-500)}`);
      return;
    }
    const problems = matches(got, JSON.parse(rewrite(JSON.stringify(s.expect))));
    t.same(problems, [], `step "${s.title}" prints what the page shows`);
  });
});
