// Cost of end-to-end protection per node-to-node payload (seal + open of a 1 KiB direct envelope, and
// of a broadcast), beside a single-key ECDSA sign from the same run.
import { randomBytes } from 'node:crypto';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import { open, sealBroadcast, sealDirect } from '../../node/transport/envelope.ts';
import type { BenchSuite } from '../harness.ts';

const a = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
const b = new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)));
const sessionId = new Uint8Array(randomBytes(32));
const payload = new Uint8Array(randomBytes(1024));

export const suite: BenchSuite = {
  title: 'transport envelopes',
  cases: [
    { name: 'envelope.direct.1KiB.seal+open', baseline: 'baseline.ecdsa.sign', runs: 200, fn: () => open(b, a, sessionId, sealDirect(a, b, { sessionId, round: 1 }, payload)) },
    { name: 'envelope.broadcast.1KiB.seal+open', baseline: 'baseline.ecdsa.sign', runs: 200, fn: () => open(b, a, sessionId, sealBroadcast(a, { sessionId, round: 1 }, payload)) },
  ],
};
