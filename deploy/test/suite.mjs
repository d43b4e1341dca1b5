// `npm test`: the checks and the tests, overlapped. First, at once, the steps the tests need: Debian's
// Chromium for the browser tests (deploy/test/ensure-chromium.mjs: nothing to do when it is there, an
// apt-get install on a fresh CI machine), the protobuf code (`npm run gen`), `tap build` (before `tap`,
// .taprc says why) and the bundle of packages for the test processes (test/setup/prebundle.mjs; tap's
// `before` then finds it made, once the protobuf code it scans for imports is there). On a fresh machine
// the Chromium install is most of their time. Then tap starts, and the type check and the lint run
// beside it: each is mostly one thread, and beside the tests they fill what the multi-process files
// leave idle while they wait on their programs (clean-clone `.ci/run` on 2 cores: 18 min 44 s with the
// checks before the tests, 16 min 37 s and 16 min 52 s like this; sampled every 5 s, the two cores are
// 196 to 200 % busy from the end of the install to the end of the run). tap's output is streamed as it
// comes; each step's output is printed whole once it is done (the setup steps before the tests, the
// checks after them), with a line that names it, so nothing interleaves. The run fails when the tests
// or any step failed. Arguments are passed to tap (`npm test -- test/some.test.ts`).
import { spawn } from 'node:child_process';

/** Run at once, each list in its order. */
const BEFORE_TESTS = [
  [['chromium', process.execPath, ['deploy/test/ensure-chromium.mjs']]],
  [['protobuf code', 'npm', ['run', '--silent', 'gen']], ['package bundle', process.execPath, ['test/setup/prebundle.mjs']]],
  [['tap build', 'npx', ['tap', 'build']]],
];
const BESIDE_TESTS = [
  ['typecheck', 'npm', ['run', '--silent', 'typecheck']],
  ['lint', 'npm', ['run', '--silent', 'lint']],
];

/** Runs one step with its output captured; resolves with how it ended. */
function step([name, command, args]) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ name, ok: false, out: `${out}${err.message}\n`, s: 0, how: 'error' }));
    child.on('close', (code, signal) => resolve({ name, ok: code === 0, out, s: (Date.now() - started) / 1000, how: signal ?? code }));
  });
}

function report(r) {
  process.stdout.write(`# ${r.name}: ${r.ok ? 'passed' : `failed (${r.how})`} in ${r.s.toFixed(1)} s\n${r.out}`);
  if (!r.ok) process.stdout.write(`not ok - ${r.name} failed (its output is above)\n`);
}

/** Runs the steps one after the other, stopping at the first that fails. */
async function inOrder(steps) {
  const done = [];
  for (const s of steps) {
    done.push(await step(s));
    if (!done.at(-1).ok) break;
  }
  return done;
}

const before = (await Promise.all(BEFORE_TESTS.map(inOrder))).flat();
before.forEach(report);
if (!before.every((r) => r.ok)) process.exit(1);

const checks = Promise.all(BESIDE_TESTS.map(step));
const tests = await new Promise((resolve) => {
  const tap = spawn('npx', ['tap', ...process.argv.slice(2)], { stdio: 'inherit' });
  tap.on('error', () => resolve(false));
  tap.on('close', (code) => resolve(code === 0));
});
const results = await checks;
results.forEach(report);
process.exit(tests && results.every((r) => r.ok) ? 0 : 1);
