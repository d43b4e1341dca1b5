// End-to-end signing over gRPC: a coordinator (in this process) and three node processes, one 2-of-3
// key. Taproot signing of an authorized intent, median and p99, beside the same FROST session run
// in-process; and throughput at concurrency 16. ECDSA also with presignatures made ahead
// (docs/protocols/pools.md): the same request through the coordinator's service with and without an
// entry, in one run (the nodes keep a rollback anchor, which a pool needs); Taproot likewise with and
// without precommitted FROST nonces.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { Cluster } from '../../test/cluster/cluster-harness.ts';
import { type RunningCoordinator } from '../../coordinator/coordinator-server.ts';
import { createClient } from '../../proto/grpc.ts';
import { CoordinatorService, Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { pointHex } from '../../node/protocols/math/curve.ts';
import { frostSign, type FrostSignParams } from '../../node/protocols/frost/frost-sign.ts';
import { simulate } from '../../test/protocols/simulate.ts';
import { dkgKeys } from '../../test/protocols/frost/keys.ts';
import type { BenchSuite } from '../harness.ts';
import { inProcessCoordinator, stopInProcess } from './in-process-coordinator.ts';
import { committee as ecdsaCommittee, sign as ecdsaSignLocal, type Committee as EcdsaCommittee } from '../../test/protocols/ecdsa/harness.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { publicKeyToAddress } from 'viem/utils';
import { toHex } from 'viem';
import type { PresignedEntries, SignInput } from '../../coordinator/vaults/vault-service.ts';
import type { PrecommittedRows } from '../../coordinator/vaults/frost-nonce-pool.ts';

bitcoin.initEccLib(ecc);
const ORG = 'org_bench';
const PATH = [86, 1, 0, 0, 0];
const apiSecret = new Uint8Array(randomBytes(32));
let cluster: Cluster;
let coordinator: RunningCoordinator;
let client: ReturnType<typeof createClient<(typeof CoordinatorService)['method']>>;
let dir = '';
let groupKey = '';
let chainCode = '';
let concurrentMs = 0;
let ecdsaConcurrentMs = 0;
const pooledConcurrentMs = { ecdsa: 0, taproot: 0 };
let localEcdsa: EcdsaCommittee;
const EVM_PATH = [44, 60, 0, 0, 0];

function evmRequest() {
  const derived = derive(groupKey, chainCode, EVM_PATH).publicKey;
  const from = publicKeyToAddress(toHex(secp256k1.Point.fromBytes(derived.toBytes(true)).toBytes(false)));
  const fields = {
    kind: 'evm.transfer' as const, organization: ORG, walletId: 'w', chainId: 31337n, nonce: 0n, from: Buffer.from(from.slice(2), 'hex'), to: new Uint8Array(20).fill(1),
    asset: { kind: 'native' as const }, amount: 1n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: bytesToHex(randomBytes(8)), notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  };
  const template = { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
  const digest = evmSigningDigest(evmTransaction(fields, template));
  const intent = encodeIntent(fields);
  return {
    vaultId: 'bench', path: EVM_PATH, scheme: Scheme.ECDSA, digests: [digest],
    authorization: { intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'k', template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: '2000000000', maxPriorityFeePerGas: '1000000000' }) },
  };
}

/** The gRPC request as the coordinator's service takes it (what its gRPC handler passes on). */
function serviceInput(r: ReturnType<typeof evmRequest>): SignInput {
  const a = r.authorization;
  return { vaultId: r.vaultId, path: r.path, scheme: 'ecdsa', digests: r.digests, intent: a.intent, intentSignature: a.intentSignature, apiKeyId: a.apiKeyId, template: a.template, endUserToken: '' };
}

// Presignature entries made in setup (one presigning session of 32); each pooled run takes one.
let entries: PresignedEntries | undefined;
const PRESIGNED = 32;
const servicePool: SignInput[] = [];
const serviceSign = () => coordinator.vaults.sign(servicePool.pop() ?? serviceInput(evmRequest()));
function pooledSign() {
  const id = entries?.entryIds.pop();
  if (!entries || !id) throw new Error('the bench ran out of presignature entries');
  const input = servicePool.pop() ?? serviceInput(evmRequest());
  return coordinator.vaults.sign({ ...input, presignatures: { ...entries, entryIds: [id] } });
}

// Precommitted nonce rows made in setup (one precommit session of 32); each pooled Taproot run takes one.
let rows: PrecommittedRows | undefined;
const taprootPool: SignInput[] = [];
function taprootInput(): SignInput {
  const r = spendRequest();
  const a = r.authorization;
  return { vaultId: r.vaultId, path: r.path, scheme: 'taproot', digests: r.digests, intent: a.intent, intentSignature: a.intentSignature, apiKeyId: a.apiKeyId, template: a.template, endUserToken: '' };
}
const taprootServiceSign = () => coordinator.vaults.sign(taprootPool.pop() ?? taprootInput());
function taprootPooledSign() {
  const row = rows?.rows.pop();
  if (!rows || !row) throw new Error('the bench ran out of precommitted nonce rows');
  return coordinator.vaults.sign({ ...(taprootPool.pop() ?? taprootInput()), precommitted: { ...rows, rows: [row] } });
}

/**
 * 16 signings at once, each with an entry made ahead: the entries are made first (presigning or
 * precommitting 16, not timed), the requests built and signed, then the 16 signings are timed together.
 */
async function pooledConcurrent(kind: 'ecdsa' | 'taproot'): Promise<void> {
  if (kind === 'ecdsa') {
    const made = await coordinator.vaults.presign({ vaultId: 'bench', path: EVM_PATH, count: 16 });
    const inputs = made.entryIds.map((id) => ({ ...(servicePool.pop() ?? serviceInput(evmRequest())), presignatures: { ...made, entryIds: [id] } }));
    const t0 = performance.now();
    await Promise.all(inputs.map((input) => coordinator.vaults.sign(input)));
    pooledConcurrentMs.ecdsa = performance.now() - t0;
  } else {
    const made = await coordinator.vaults.precommit({ vaultId: 'bench', path: PATH, scheme: 'taproot', count: 16 });
    const inputs = made.rows.map((row) => ({ ...(taprootPool.pop() ?? taprootInput()), precommitted: { ...made, rows: [row] } }));
    const t0 = performance.now();
    await Promise.all(inputs.map((input) => coordinator.vaults.sign(input)));
    pooledConcurrentMs.taproot = performance.now() - t0;
  }
}
const perSecond = (ms: number) => Math.round((16 / ms) * 1000 * 10) / 10;

let e = 0;
function ecdsaInProcess() {
  ecdsaSignLocal(localEcdsa, [1, 2], digest, 'bench-ecdsa-' + e++, EVM_PATH);
}

function spendRequest() {
  const q = outputKey(pointHex(derive(groupKey, chainCode, PATH).publicKey));
  const own = bitcoin.payments.p2tr({ pubkey: q, network: bitcoin.networks.regtest });
  const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(9), network: bitcoin.networks.regtest });
  const prev = new Uint8Array(randomBytes(32));
  const intent = encodeIntent({
    kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from: own.address!, outputs: [{ address: dest.address!, amount: 50_000n }],
    maxFeeRate: 20n, maxFee: 5_000n, inputs: [{ txid: prev.slice().reverse(), vout: 0 }], idempotencyKey: bytesToHex(randomBytes(8)), notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
  });
  const tx = new bitcoin.Transaction();
  tx.addInput(prev, 0);
  tx.addOutput(dest.output!, 50_000n);
  tx.addOutput(own.output!, 49_000n);
  const digest = tx.hashForWitnessV1(0, [own.output!], [100_000n], bitcoin.Transaction.SIGHASH_DEFAULT);
  const template = encodeBlob('btc-template', { tx: tx.toHex(), prevouts: [{ script: bytesToHex(own.output!), value: '100000' }] });
  return { vaultId: 'bench', path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [digest], authorization: { intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'k', template } };
}

// Requests are built and signed ahead (as a customer's SDK would), so the timed runs hold what the
// cluster does: the nodes' checks, the sessions and the relaying.
type SignRequest = ReturnType<typeof spendRequest> | ReturnType<typeof evmRequest>;
const POOL = 200;
let spendPool: SignRequest[] = [];
let evmPool: SignRequest[] = [];
const spend = () => client.sign(spendPool.pop() ?? spendRequest());
const evmSign = () => client.sign(evmPool.pop() ?? evmRequest());

/**
 * Signing latency while a key is made on the same nodes (DKG and ECDSA OT setup): Taproot and ECDSA
 * signatures one after another, first idle, then for as long as a vault creation runs. The node's
 * protocol workers (NODE_PROTOCOL_WORKERS, passed through to the nodes) keep the key generation's long
 * steps off the event loop that serves the signing rounds.
 */
const duringKeygen = { idle: [] as number[], busy: [] as number[], keys: 0 };
let keygenSeq = 0;
async function timedSign(into: number[], kind: number): Promise<void> {
  const t0 = performance.now();
  await (kind % 2 === 0 ? spend() : evmSign());
  into.push(performance.now() - t0);
}
async function signDuringKeygen(): Promise<void> {
  for (let i = 0; i < 6; i++) await timedSign(duringKeygen.idle, i);
  let done = false;
  const keygen = client.createVault({ vaultId: `bench-bg-${keygenSeq++}`, owner: ORG, tier: Tier.HOSTED }, { deadline: Date.now() + 120_000 }).finally(() => {
    done = true;
  });
  for (let i = 0; !done; i++) await timedSign(duringKeygen.busy, i);
  await keygen;
  duringKeygen.keys++;
}
const quantile = (xs: number[], q: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * q))] ?? NaN;
const median = (xs: number[]) => quantile(xs, 0.5);

const localKeys = dkgKeys(3, 2, 'cluster-bench');
const digest = bytesToHex(sha256(new TextEncoder().encode('cluster bench')));
let n = 0;
function inProcess() {
  const sid = bytesToHex(sha256(new TextEncoder().encode('s' + n++)));
  const params = new Map<number, FrostSignParams>([1, 2].map((me) => [me, { sessionId: sid, suite: 'taproot', message: digest, signers: [1, 2], me, key: localKeys.get(me)!, path: PATH }]));
  if (simulate(frostSign, params, { seed: sid }).results.size !== 2) throw new Error('sign failed');
}

export const suite: BenchSuite = {
  title: 'cluster signing over gRPC',
  async setup() {
    cluster = new Cluster();
    let port: number;
    ({ coordinator, dir, port } = await inProcessCoordinator(cluster, 'bench-coord-'));
    const keysFile = join(cluster.dir, 'keys.json');
    writeFileSync(keysFile, JSON.stringify({ [ORG]: { k: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
    const workers = process.env.NODE_PROTOCOL_WORKERS;
    // Each node keeps a rollback anchor (here beside its directory), without which it keeps no presignatures.
    await Promise.all(['n1', 'n2', 'n3'].map((name) => cluster.startNode(name, { NODE_API_KEYS_FILE: keysFile, NODE_ROLLBACK_ANCHOR_FILE: join(cluster.dir, `${name}.anchor`), ...(workers !== undefined ? { NODE_PROTOCOL_WORKERS: workers } : {}) })));
    client = createClient(CoordinatorService, `127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const k = (await client.createVault({ vaultId: 'bench', owner: ORG, tier: Tier.HOSTED }, { deadline: Date.now() + 120_000 })).vault!;
    localEcdsa = ecdsaCommittee(3, 2, 'cluster-bench-ecdsa');
    groupKey = bytesToHex(k.publicKey);
    chainCode = bytesToHex(k.chainCode);
    spendPool = Array.from({ length: POOL }, spendRequest);
    evmPool = Array.from({ length: POOL }, evmRequest);
    servicePool.push(...Array.from({ length: 60 }, () => serviceInput(evmRequest())));
    entries = await coordinator.vaults.presign({ vaultId: 'bench', path: EVM_PATH, count: PRESIGNED });
    taprootPool.push(...Array.from({ length: 60 }, taprootInput));
    rows = await coordinator.vaults.precommit({ vaultId: 'bench', path: PATH, scheme: 'taproot', count: PRESIGNED });
  },
  // Also after a setup that failed halfway (bench/harness.ts): stops only what was started.
  async teardown() {
    await stopInProcess({ client, cluster, coordinator, dir });
  },
  cases: [
    { name: 'cluster.inprocess.frost.2of3', baseline: 'baseline.schnorr.sign', runs: 30, fn: inProcess },
    { name: 'cluster.grpc.schnorr.2of3', baseline: 'cluster.inprocess.frost.2of3', runs: 30, fn: spend },
    {
      name: 'cluster.grpc.schnorr.2of3.x16',
      baseline: 'cluster.grpc.schnorr.2of3',
      runs: 3,
      warmup: 1,
      fn: async () => {
        const t0 = performance.now();
        await Promise.all(Array.from({ length: 16 }, () => spend()));
        concurrentMs = performance.now() - t0;
      },
      extra: () => ({ sigs_per_s: perSecond(concurrentMs) }),
    },
    { name: 'cluster.service.schnorr.2of3', baseline: 'cluster.grpc.schnorr.2of3', runs: 25, fn: taprootServiceSign },
    // Pooled signings against a single-key sign of the same run: the figure the performance targets use.
    { name: 'cluster.service.schnorr.2of3.pooled', baseline: 'baseline.schnorr.sign', runs: 25, warmup: 5, fn: taprootPooledSign },
    {
      name: 'cluster.service.schnorr.2of3.pooled.x16', runs: 3, warmup: 1, fn: () => pooledConcurrent('taproot'),
      extra: () => ({ sigs_per_s: perSecond(pooledConcurrentMs.taproot) }),
    },
    { name: 'cluster.inprocess.ecdsa.2of3', baseline: 'baseline.ecdsa.sign', runs: 20, fn: ecdsaInProcess },
    { name: 'cluster.grpc.ecdsa.2of3', baseline: 'cluster.inprocess.ecdsa.2of3', runs: 20, fn: evmSign },
    { name: 'cluster.service.ecdsa.2of3', baseline: 'cluster.inprocess.ecdsa.2of3', runs: 20, fn: serviceSign },
    { name: 'cluster.service.ecdsa.2of3.pooled', baseline: 'baseline.ecdsa.sign', runs: 25, warmup: 5, fn: pooledSign },
    {
      name: 'cluster.service.ecdsa.2of3.pooled.x16', runs: 3, warmup: 1, fn: () => pooledConcurrent('ecdsa'),
      extra: () => ({ sigs_per_s: perSecond(pooledConcurrentMs.ecdsa) }),
    },
    {
      name: 'cluster.grpc.ecdsa.2of3.x16',
      baseline: 'cluster.grpc.ecdsa.2of3',
      runs: 3,
      warmup: 1,
      fn: async () => {
        const t0 = performance.now();
        await Promise.all(Array.from({ length: 16 }, () => evmSign()));
        ecdsaConcurrentMs = performance.now() - t0;
      },
      extra: () => ({ sigs_per_s: perSecond(ecdsaConcurrentMs) }),
    },
    {
      name: 'cluster.grpc.sign.during-keygen',
      runs: 3,
      warmup: 0,
      fn: signDuringKeygen,
      extra: () => ({
        protocol_workers: process.env.NODE_PROTOCOL_WORKERS ?? 'default',
        keys_made: duringKeygen.keys,
        idle_median_ms: Math.round(median(duringKeygen.idle)),
        during_keygen_median_ms: Math.round(median(duringKeygen.busy)),
        during_keygen_p90_ms: Math.round(quantile(duringKeygen.busy, 0.9)),
        during_keygen_max_ms: Math.round(Math.max(...duringKeygen.busy)),
        ratio_during_to_idle: Math.round((median(duringKeygen.busy) / median(duringKeygen.idle)) * 100) / 100,
        p90_ratio_during_to_idle: Math.round((quantile(duringKeygen.busy, 0.9) / quantile(duringKeygen.idle, 0.9)) * 100) / 100,
      }),
    },
  ],
};
