// `npm test` after the protobuf code is generated: the checks and the tests, overlapped. The tests need
// `tap build` (before `tap`, .taprc says why) and the bundle of packages for the test processes
// (test/setup/prebundle.mjs; tap's `before` then finds it made), so those two run first, at once. Then
// tap starts, and the type check and the lint run beside it: each is mostly one thread, and the test
// run leaves part of the two cores idle while its multi-process files wait on their programs, so the
// checks cost the run little of their own time (clean-clone `.ci/run` on 2 cores: 18 min 44 s with the
// checks before the tests and three test processes, 16 min 37 s and 16 min 52 s in two runs like this
// with four, .taprc says why it is three again). tap's output is streamed as it comes; each check's output is
// printed whole after the tests, with a line that names it, so nothing interleaves. The run fails when
// the tests or any step failed. Arguments are passed to tap (`npm test -- test/some.test.ts`).
import { spawn } from 'node:child_process';

const BEFORE_TESTS = [
  ['tap build', 'npx', ['tap', 'build']],
  ['package bundle', process.execPath, ['test/setup/prebundle.mjs']],
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

const before = await Promise.all(BEFORE_TESTS.map(step));
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
