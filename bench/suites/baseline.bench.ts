// Single-party baselines every threshold figure is compared against, measured in the same run.
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import type { BenchSuite } from '../harness.ts';

const sk = sha256(new TextEncoder().encode('bench baseline key'));
const msg = sha256(new TextEncoder().encode('bench baseline message'));

export const suite: BenchSuite = {
  title: 'single-party baselines',
  cases: [
    { name: 'baseline.schnorr.sign', runs: 200, fn: () => schnorr.sign(msg, sk) },
    { name: 'baseline.ecdsa.sign', runs: 200, fn: () => secp256k1.sign(msg, sk, { prehash: false }) },
  ],
};
