// The steps of `npm test` before the tests, at once: the type check, the lint, `tap build` (before `tap`,
// .taprc says why) and the bundle of packages for the test processes (test/setup/prebundle.mjs; tap's
// `before` then finds it made). Each is mostly one thread, and the machine that runs the suite has two
// cores or more. Each step's output is printed whole when it ends, so the steps do not
// interleave; the run fails, after all have ended, when any did.
import { spawn } from 'node:child_process';

/** Two lines of steps, each run in order, the two at once: the type check is about as long as the rest. */
const LINES = [
  [['typecheck', 'npm', ['run', '--silent', 'typecheck']]],
  [['lint', 'npm', ['run', '--silent', 'lint']], ['tap build', 'npx', ['tap', 'build']], ['package bundle', process.execPath, ['test/setup/prebundle.mjs']]],
];

function run([name, command, args]) {
  return new Promise((resolve) => {
    const started = Date.now();
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (err) => resolve({ name, ok: false, out: `${out}${err.message}\n`, s: 0 }));
    child.on('close', (code, signal) => resolve({ name, ok: code === 0, out, s: (Date.now() - started) / 1000, how: signal ?? code }));
  });
}

async function runLine(steps) {
  const results = [];
  for (const step of steps) {
    const r = await run(step);
    process.stdout.write(`# ${r.name}: ${r.ok ? 'passed' : `failed (${r.how})`} in ${r.s.toFixed(1)} s\n${r.out}`);
    results.push(r);
  }
  return results;
}

const results = (await Promise.all(LINES.map(runLine))).flat();
process.exit(results.every((r) => r.ok) ? 0 : 1);
