// What a new operator meets first (docs/quickstart.md): every program answers `--help` with its usage on
// standard output and exits 0, starting nothing; and the files the walkthroughs write at the repository
// root are ignored by git.
import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { resolve } from 'node:path';
import { PROGRAM_LAUNCHER, programArgs, untracked } from '../support/program.ts';

const root = resolve(import.meta.dirname, '../..');

/** Each npm script's program: its name and the arguments of PROGRAM_LAUNCHER that run it. */
const PROGRAMS: [string, () => string[]][] = [
  ['start', () => untracked(process.execPath, [resolve(root, 'deploy/local/start.mjs')])],
  ['api', () => programArgs('api/server.ts')],
  ['coordinator', () => programArgs('coordinator/main.ts')],
  ['node', () => programArgs('node/main.ts')],
  ['admin', () => programArgs('api/admin/main.ts')],
  ['regtest', () => programArgs('deploy/regtest/main.ts')],
  ['bench', () => programArgs('bench/run.ts')],
  ['cli', () => programArgs('api/sdk/cli.ts')],
  ['node-identity', () => programArgs('node/identity-cli.ts')],
  ['tee-attest', () => programArgs('tee/attest-cli.ts')],
  ['enclave-host-store', () => programArgs('tee/host-store/main.ts')],
  ['anchor-keeper', () => programArgs('node/anchor-keeper/main.ts')],
  ['oidc', () => programArgs('deploy/oidc/main.ts')],
];

const run = (args: string[]) => new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
  // An environment with nothing set: the usage must not depend on a configuration.
  execFile(PROGRAM_LAUNCHER, [...args, '--help'], { cwd: root, env: { PATH: process.env.PATH ?? '' }, timeout: 60_000 }, (err, stdout, stderr) =>
    done({ code: err ? (typeof err.code === 'number' ? err.code : null) : 0, stdout, stderr }));
});

t.test('every program answers --help with its usage and exits 0', async (t) => {
  const answers = await Promise.all(PROGRAMS.map(async ([name, args]) => [name, await run(args())] as const));
  for (const [name, a] of answers) {
    t.equal(a.code, 0, `${name}: exit 0 (${a.stderr.slice(0, 300)})`);
    t.match(a.stdout, /^usage: /, `${name}: the usage on standard output`);
    t.equal(a.stderr, '', `${name}: nothing on standard error`);
  }
  const byName = new Map(answers);
  t.match(byName.get('api')!.stdout, /API_DATA_DIR \(dataDir\), default: /, 'a server names its settings with their defaults');
  t.match(byName.get('node')!.stdout, /NODE_CONFIG_FILE: a JSON file of the settings/);
  t.match(byName.get('start')!.stdout, /REGTEST_PORT/);
});

t.test('what the walkthroughs write at the repository root is ignored by git', async (t) => {
  for (const path of ['key.hex', 'key.json', 'my-node/node.json', 'my-node.identity.json', 'my-node.log', 'node.json', 'node.enrolment.json', 'node.attestation', 'quickstart/key.hex', 'platform-quickstart/key.hex', 'data/tee-node.attestation', 'data/self-walkthrough/key.hex']) {
    let ignored = true;
    try {
      execFileSync('git', ['check-ignore', '-q', '--no-index', path], { cwd: root, stdio: 'ignore' });
    } catch {
      ignored = false;
    }
    t.ok(ignored, `${path} is ignored`);
  }
});
