// docs/quickstart.md, docs/quickstart-platform.md, then the self-node and TEE walkthroughs (docs/self-node.md
// "Trying it on one machine", docs/tee.md "Running locally with the dev authority"), run as written on one
// `npm start -- --oidc --tee-dev` (the launcher, with its build, anvil, the regtest service, the development
// OpenID provider, the development attestation authority, coordinator, three nodes and the API) on free
// ports in a temporary data directory: for each page, every ```sh block of its steps (the `### ` sections
// under "## Steps", or under the walkthrough's heading) in one bash session, in order; each step's output
// must match the ```json block shown after it (every key shown, with its value; `…` matches any text). Only
// ports and the data and work directories are rewritten.
import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../cluster/cluster-harness.ts';
import { PROGRAM_LAUNCHER, untracked } from '../support/program.ts';
import { infrastructureAddresses } from '../../api/tokenization/chain/safe-infrastructure.ts';

t.setTimeout(900_000);
const root = fileURLToPath(new URL('../../', import.meta.url));
const doc = readFileSync(join(root, 'docs/quickstart.md'), 'utf8');
const platformDoc = readFileSync(join(root, 'docs/quickstart-platform.md'), 'utf8');
const selfNodeDoc = readFileSync(join(root, 'docs/self-node.md'), 'utf8');
const teeDoc = readFileSync(join(root, 'docs/tee.md'), 'utf8');

interface Step { title: string; sh: string; expect?: unknown }

/** The process groups of the pages' bash sessions, stopped before the stack. */
const pageGroups: number[] = [];
function stopPages(signal: NodeJS.Signals): void {
  for (const pid of pageGroups) {
    try {
      process.kill(-pid, signal);
    } catch {
      // nothing left running in it
    }
  }
}

/** The steps: each `### ` heading of the `## ` section `heading`, its ```sh block and the ```json block after it. */
function steps(markdown: string, heading = '## Steps'): Step[] {
  const at = markdown.indexOf(`\n${heading}\n`);
  if (at < 0) throw new Error(`no "${heading}" section`);
  const next = markdown.indexOf('\n## ', at + heading.length + 2);
  const body = markdown.slice(at, next < 0 ? undefined : next);
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

/** Runs a page's steps in one bash session and checks each step's output against the page. */
async function runPage(t: Test, all: Step[], work: string, script: (s: Step) => string, env: NodeJS.ProcessEnv, name: string): Promise<void> {
  const lines = ['set -euo pipefail', `cd ${JSON.stringify(root)}`, ...all.map((s, i) => `{\n${script(s)}\n} > ${work}.step${i}.out 2> ${work}.step${i}.err`)].join('\n');
  writeFileSync(`${work}.steps.sh`, lines);
  // Its own process group: what a page leaves running in the background (the walkthroughs' nodes) stops
  // with it at the end of the test.
  const bash = spawn(PROGRAM_LAUNCHER, untracked('bash', [`${work}.steps.sh`]), { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  pageGroups.push(bash.pid!);
  let bashErr = '';
  bash.stderr.on('data', (d: Buffer) => (bashErr += d.toString()));
  const code = await new Promise<number | null>((resolve) => bash.on('close', resolve));
  const out = (i: number, kind: 'out' | 'err') => (existsSync(`${work}.step${i}.${kind}`) ? readFileSync(`${work}.step${i}.${kind}`, 'utf8') : '');
  const ran = all.findIndex((_, i) => !existsSync(`${work}.step${i}.out`));
  const last = (ran < 0 ? all.length : ran) - 1;
  t.equal(code, 0, `${name}: every step ran${code === 0 ? '' : `; it stopped at "${all[last]?.title}": ${out(last, 'out').slice(-800)} ${out(last, 'err').slice(-1500)} ${bashErr.slice(-500)}`}`);
  all.forEach((s, i) => {
    if (s.expect === undefined || (code !== 0 && i > last)) return;
    let got: unknown;
    try {
      got = lastJson(out(i, 'out'));
    } catch {
      t.fail(`${name}: step "${s.title}" printed no JSON: ${out(i, 'out').slice(-500)} ${out(i, 'err').slice(-500)}`);
      return;
    }
    const problems = matches(got, s.expect);
    t.same(problems, [], `${name}: step "${s.title}" prints what the page shows`);
  });
}

t.test('docs/quickstart.md, docs/quickstart-platform.md and the self-node and TEE walkthroughs work as written, step by step, against one npm start', async (t) => {
  const all = steps(doc);
  t.ok(all.length >= 8, `${all.length} steps`);
  const platformSteps = steps(platformDoc);
  t.ok(platformSteps.length >= 12, `${platformSteps.length} platform steps`);
  const tmp = mkdtempSync(join(tmpdir(), 'quickstart-'));
  const data = join(tmp, 'data');
  const work = join(tmp, 'work');
  const platformWork = join(tmp, 'platform');
  const ports = { api: await freePort(), coordinator: await freePort(), anvil: await freePort(), regtest: await freePort(), hook: await freePort(), oidc: await freePort(), platformHook: await freePort() };
  const rewrite = (s: string) => s
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.api}`)
    .replaceAll('127.0.0.1:9000', `127.0.0.1:${ports.hook}`).replaceAll('--port 9000', `--port ${ports.hook}`)
    .replaceAll('./quickstart/', `${work}/`).replaceAll('quickstart/', `${work}/`).replaceAll('mkdir -p quickstart', `mkdir -p ${work}`)
    .replaceAll('data/operator', `${data}/operator`);

  const env = {
    ...process.env, DATA_DIR: data, API_PORT: String(ports.api), COORDINATOR_PORT: String(ports.coordinator), ANVIL_PORT: String(ports.anvil),
    REGTEST_PORT: String(ports.regtest), ANVIL_URL: `http://127.0.0.1:${ports.anvil}`, REGTEST_URL: `http://127.0.0.1:${ports.regtest}`,
    OIDC_PORT: String(ports.oidc), OIDC_URL: `http://127.0.0.1:${ports.oidc}`,
  };
  // The platform page: its own files, webhook port and the provider's port and key directory.
  const rewritePlatform = (text: string) => text
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.api}`)
    .replaceAll('127.0.0.1:9400', `127.0.0.1:${ports.oidc}`)
    .replaceAll('127.0.0.1:9001', `127.0.0.1:${ports.platformHook}`).replaceAll('--port 9001', `--port ${ports.platformHook}`)
    .replaceAll('./platform-quickstart/', `${platformWork}/`).replaceAll('platform-quickstart/', `${platformWork}/`).replaceAll('mkdir -p platform-quickstart', `mkdir -p ${platformWork}`)
    .replaceAll('data/operator', `${data}/operator`).replaceAll('data/oidc/', `${data}/oidc/`);
  // Step 1: npm start, in its own process group so that stopping it stops everything it started.
  let log = '';
  const start: ChildProcess = spawn(PROGRAM_LAUNCHER, untracked(process.execPath, ['deploy/local/start.mjs', '--oidc', '--tee-dev']), { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  start.stdout!.on('data', (d: Buffer) => (log += d.toString()));
  start.stderr!.on('data', (d: Buffer) => (log += d.toString()));
  t.teardown(async () => {
    stopPages('SIGTERM');
    try {
      process.kill(-start.pid!, 'SIGINT');
    } catch {
      // already gone
    }
    await new Promise((r) => setTimeout(r, 1500));
    stopPages('SIGKILL');
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

  for (let i = 0; i < 60 && !log.includes('[oidc] development OpenID provider'); i++) await new Promise((r) => setTimeout(r, 500));
  t.match(log, new RegExp(`\\[oidc\\] development OpenID provider \\(any user, any password\\) at http://127\\.0\\.0\\.1:${ports.oidc}; client bff-client, secret [^;]+; public JWKS in [^;]+; test user: alice`), 'npm start -- --oidc prints the provider and its test user');

  // Steps 2…: one bash session per page, each step's output in its own file; the platform page after the
  // first, on the same stack.
  await runPage(t, all.map((s) => ({ ...s, ...(s.expect !== undefined ? { expect: JSON.parse(rewrite(JSON.stringify(s.expect))) as unknown } : {}) })), work, (s) => rewrite(s.sh), env, 'quickstart.md');
  await runPage(t, platformSteps.map((s) => ({ ...s, ...(s.expect !== undefined ? { expect: JSON.parse(rewritePlatform(JSON.stringify(s.expect))) as unknown } : {}) })), platformWork, (s) => rewritePlatform(s.sh), env, 'quickstart-platform.md');
  // The walkthroughs of a customer's own nodes, on the same stack: the self node, then the TEE node
  // attested by the development authority `--tee-dev` made.
  t.match(log, /\[start\] --tee-dev: DEV-ONLY attestation authority created in \S+tee-dev-authority, its root pinned on the nodes, the coordinator and the API; never in production/, 'npm start -- --tee-dev prints the line tee.md shows');
  const selfWork = join(tmp, 'self-walkthrough');
  const teeWork = join(tmp, 'tee-walkthrough');
  const rewriteWalkthrough = (text: string) => text
    .replaceAll('127.0.0.1:8080', `127.0.0.1:${ports.api}`)
    .replaceAll('127.0.0.1:7400', `127.0.0.1:${ports.coordinator}`)
    .replaceAll('./data/self-walkthrough/', `${selfWork}/`).replaceAll('data/self-walkthrough', selfWork)
    .replaceAll('./data/tee-walkthrough/', `${teeWork}/`).replaceAll('data/tee-walkthrough', teeWork)
    .replaceAll('data/tee-dev-authority', `${data}/tee-dev-authority`)
    .replaceAll('data/operator', `${data}/operator`);
  const walkthrough = (markdown: string, heading: string, name: string, work: string) => {
    const all = steps(markdown, heading);
    t.ok(all.length >= 5, `${name}: ${all.length} steps`);
    return runPage(t, all.map((s) => ({ ...s, ...(s.expect !== undefined ? { expect: JSON.parse(rewriteWalkthrough(JSON.stringify(s.expect))) as unknown } : {}) })), work, (s) => rewriteWalkthrough(s.sh), env, name);
  };
  await walkthrough(selfNodeDoc, '## Trying it on one machine', 'self-node.md', selfWork);
  await walkthrough(teeDoc, '## Running locally with the dev authority', 'tee.md', teeWork);
});
