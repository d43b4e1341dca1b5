// Time-ordered identifiers: 12 hex digits of milliseconds, 6 of a per-process counter, 8 random. Their
// byte order is their creation order within a process, which keyset pagination relies on.
import { randomBytes } from 'node:crypto';

let lastMs = 0;
let counter = 0;

export function newId(prefix: string, nowMs = Date.now()): string {
  if (nowMs <= lastMs) {
    counter = (counter + 1) & 0xffffff;
    if (counter === 0) lastMs += 1;
  } else {
    lastMs = nowMs;
    counter = 0;
  }
  return `${prefix}_${lastMs.toString(16).padStart(12, '0')}${counter.toString(16).padStart(6, '0')}${randomBytes(4).toString('hex')}`;
}
