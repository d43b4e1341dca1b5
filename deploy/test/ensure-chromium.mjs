// First step of `npm test`: the Hosted Auth browser test (test/api/member-auth/hosted-auth-browser.test.ts)
// drives Debian's Chromium at /usr/bin/chromium. Present: nothing to do. Missing, as root with apt-get
// (a fresh Debian CI machine): installs the `chromium` package, non-interactively and without
// recommended packages. Otherwise it says what to install and stops, so the suite is not run without it.
import { existsSync } from 'node:fs';
import { spawnSync } from 'node:child_process';

const CHROMIUM = '/usr/bin/chromium';

if (!existsSync(CHROMIUM)) {
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const apt = spawnSync('sh', ['-c', 'command -v apt-get'], { stdio: 'ignore' }).status === 0;
  if (!root || !apt) {
    process.stderr.write(`ensure-chromium: ${CHROMIUM} is missing and cannot be installed here (${!root ? 'not root' : 'no apt-get'}).\n`
      + 'Install Debian\'s chromium package (apt-get install chromium), then run the tests again.\n');
    process.exit(1);
  }
  process.stdout.write('ensure-chromium: installing Debian\'s chromium package for the browser test\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', '--no-install-recommends', 'chromium']]) {
    const r = spawnSync('apt-get', args, { stdio: 'inherit', env });
    if (r.status !== 0) {
      process.stderr.write(`ensure-chromium: apt-get ${args.join(' ')} failed (exit ${r.status ?? r.signal})\n`);
      process.exit(1);
    }
  }
  if (!existsSync(CHROMIUM)) {
    process.stderr.write(`ensure-chromium: the chromium package installed no ${CHROMIUM}\n`);
    process.exit(1);
  }
}
