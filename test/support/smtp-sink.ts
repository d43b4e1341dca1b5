// A real SMTP server on loopback for tests (smtp-server), parsing what it receives with mailparser: the
// API's mailer talks to it exactly as to a production relay (no STARTTLS offered, no authentication).
// `next(to)` waits for the next message to an address; `all` is everything received.
import type { Test } from 'tap';
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';
import { simpleParser } from 'mailparser';

export interface SunkMessage { to: string[]; from: string; subject: string; text: string; html: string }

export async function startSmtpSink(t: Test) {
  const all: SunkMessage[] = [];
  const waiting: { to: string; resolve: (m: SunkMessage) => void }[] = [];
  const taken = new Set<SunkMessage>();
  const server = new SMTPServer({
    authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false, size: 1024 * 1024,
    onData(stream, _session, done) {
      simpleParser(stream).then((p) => {
        const to = (Array.isArray(p.to) ? p.to : p.to ? [p.to] : []).flatMap((a) => a.value.map((v) => (v.address ?? '').toLowerCase()));
        const m: SunkMessage = { to, from: p.from?.text ?? '', subject: p.subject ?? '', text: p.text ?? '', html: typeof p.html === 'string' ? p.html : '' };
        all.push(m);
        const w = waiting.findIndex((x) => to.includes(x.to));
        if (w >= 0) {
          taken.add(m);
          waiting.splice(w, 1)[0]!.resolve(m);
        }
        done();
      }, (err: Error) => done(err));
    },
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const port = (server.server.address() as AddressInfo).port;

  /** The next message to `to` not yet taken: one already received, or the next to arrive (10 s at most). */
  function next(to: string): Promise<SunkMessage> {
    const addr = to.toLowerCase();
    const got = all.find((m) => !taken.has(m) && m.to.includes(addr));
    if (got) {
      taken.add(got);
      return Promise.resolve(got);
    }
    return new Promise((resolve, reject) => {
      const entry = { to: addr, resolve: (m: SunkMessage) => { clearTimeout(timer); resolve(m); } };
      const timer = setTimeout(() => {
        waiting.splice(waiting.indexOf(entry), 1);
        reject(new Error(`no email to ${addr} within 10 s`));
      }, 10_000);
      waiting.push(entry);
    });
  }

  /** The six-digit code of the next message to `to`. */
  async function nextCode(to: string): Promise<string> {
    const m = await next(to);
    const code = /\b(\d{6})\b/.exec(m.text)?.[1];
    if (!code) throw new Error('no code in the message');
    return code;
  }

  return { url: `smtp://127.0.0.1:${port}`, all, next, nextCode, sentTo: (to: string) => all.filter((m) => m.to.includes(to.toLowerCase())) };
}
