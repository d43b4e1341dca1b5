// Before `npm start` spawns anything: is every port it needs free? When one is taken, say which port,
// which setting moves it, and which process holds it (from /proc on Linux, else `lsof`), rather than
// letting a child die with `exited (1)`.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { createServer } from 'node:net';

/** Resolves true when `host:port` can be bound now. */
export function portFree(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => server.close(() => resolve(true)));
  });
}

/** The listening socket inodes of a port, from /proc/net/tcp and tcp6 (state 0A: LISTEN). */
function listeningInodes(port) {
  const inodes = new Set();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue;
      if (parseInt(f[1].split(':').pop(), 16) === port) inodes.add(f[9]);
    }
  }
  return inodes;
}

/** `pid: command line` of the process listening on `port`, or undefined when it cannot be seen. */
export function portOwner(port) {
  const inodes = listeningInodes(port);
  if (inodes.size > 0) {
    let pids = [];
    try {
      pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
    } catch {
      pids = [];
    }
    for (const pid of pids) {
      let fds;
      try {
        fds = readdirSync(`/proc/${pid}/fd`);
      } catch {
        continue; // another user's process, or gone
      }
      for (const fd of fds) {
        let target;
        try {
          target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        } catch {
          continue;
        }
        const m = /^socket:\[(\d+)\]$/.exec(target);
        if (m && inodes.has(m[1])) {
          let cmd = '';
          try {
            cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
          } catch {
            // gone meanwhile
          }
          cmd = cmd.replace(/\s+/g, ' ').trim();
          return `pid ${pid}${cmd ? `: ${cmd.length > 160 ? cmd.slice(0, 157) + '...' : cmd}` : ''}`;
        }
      }
    }
  }
  const lsof = spawnSync('lsof', ['-nP', `-iTCP:${port}`, '-sTCP:LISTEN', '-Fpc'], { encoding: 'utf8' });
  if (lsof.status === 0 && lsof.stdout) {
    const pid = /^p(\d+)$/m.exec(lsof.stdout)?.[1];
    const cmd = /^c(.+)$/m.exec(lsof.stdout)?.[1];
    if (pid) return `pid ${pid}${cmd ? `: ${cmd}` : ''}`;
  }
  return undefined;
}

/**
 * Checks every `{name, port, setting}`; returns one message per port in use (empty when all are
 * free), each naming the process and the setting that moves the port.
 */
export async function portClashes(wanted, host = '127.0.0.1') {
  const problems = [];
  for (const { name, port, setting } of wanted) {
    if (await portFree(Number(port), host)) continue;
    const owner = portOwner(Number(port));
    problems.push(
      `port ${port} (${name}) on ${host} is already in use${owner ? ` by ${owner}` : ' (by a process this user cannot see)'}.\n` +
      `        stop that process (a previous \`npm start\` still running?), or move ${name}: ${setting}=<free port> npm start`,
    );
  }
  return problems;
}
