// A coordinator that lost its records rebuilds them from the nodes (docs/operations.md "Rebuilding a
// coordinator's records"), and a vault moves between shards ("Moving a vault"), as real processes: two
// coordinator shards, three signer nodes attached to both. A store restored from a copy older than a
// reshare comes forward to the new epoch as the nodes attach; a store deleted outright is rebuilt on the
// first request for the vault; each time the vault signs again, Taproot and ECDSA. Then the vault moves
// to the other shard the way the API's operator route moves it: it signs there, and the shard it left
// refuses it.
import { PATH, taprootSpend } from './taproot-spend.ts';
import t from 'tap';
import { cpSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr, secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Cluster, waitUntil } from './cluster-harness.ts';
import { CoordinatorShards } from '../../api/coordinator/coordinator-shards.ts';
import { Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { openStore } from '../../api/store/open-store.ts';
import { VAULTS } from '../../api/vaults/collections.ts';
import type { VaultRecord } from '../../api/vaults/records.ts';
import { COORDINATOR_SHARDS } from '../../api/coordinator/coordinator-shards.ts';
import { moveVault } from '../../api/coordinator/move-vault.ts';
import { hexToBytes, toHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';

// Real processes on a 2-core machine shared with the rest of the suite.
t.setTimeout(300_000);

const ORG = 'org_acme';
const apiSecret = new Uint8Array(randomBytes(32));
const VAULT = 'vlt_rebuild_1';

t.test('a lost or stale coordinator store is rebuilt from the nodes, and a vault moves to another shard', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  await cluster.roster(['node-1', 'node-2', 'node-3']);
  const env = { COORDINATOR_ATTACH_WAIT_MS: '15000', COORDINATOR_SIGN_TIMEOUT_MS: '30000' };
  await Promise.all([cluster.startShard('a', env), cluster.startShard('b', env)]);
  const keysFile = join(cluster.dir, 'api-keys.json');
  writeFileSync(keysFile, JSON.stringify({ [ORG]: { key_1: bytesToHex(ed25519.getPublicKey(apiSecret)) } }));
  await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, { NODE_API_KEYS_FILE: keysFile })));
  const [addrA, addrB] = cluster.coordinatorAddresses();
  const shards = CoordinatorShards.connect([{ name: 'a', address: addrA! }, { name: 'b', address: addrB! }], {});
  t.teardown(() => shards.close());
  await waitUntil(async () => (await shards.states()).every((s) => s.state === 'reachable' && s.nodes.length === 3), 20_000, 'three nodes on each shard');
  const on = (shard: 'a' | 'b') => shards.forVault({ id: VAULT, coordinator_shard: shard });

  const created = (await on('a').createVault({ vaultId: VAULT, owner: ORG, tier: Tier.HOSTED, requestId: `${VAULT}:job_1` }, { deadline: Date.now() + 90_000 })).vault!;
  const groupKey = bytesToHex(created.publicKey);
  const chainCode = bytesToHex(created.chainCode);

  let n = 0;
  const signTaproot = async (shard: 'a' | 'b', what: string) => {
    const spend = taprootSpend(ORG, apiSecret, groupKey, chainCode);
    const res = await on(shard).sign({
      vaultId: VAULT, path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [spend.digest], requestId: `txn_tr_${n++}`,
      authorization: { intent: spend.intent, intentSignature: spend.signature, apiKeyId: 'key_1', template: spend.template },
    }, { deadline: Date.now() + 60_000 });
    t.ok(schnorr.verify(res.signatures[0]!, spend.digest, spend.q), `${what}: the Taproot signature verifies (noble)`);
  };
  const signEcdsa = async (shard: 'a' | 'b', what: string) => {
    const path = [44, 60, 0, 0, 0];
    const derived = derive(groupKey, chainCode, path).publicKey;
    const nonce = n++;
    const fields = {
      kind: 'evm.transfer' as const, organization: ORG, walletId: 'w-evm', chainId: 31337n, nonce: BigInt(nonce), from: hexToBytes(publicKeyToAddress(toHex(derived.toBytes(false)))), to: new Uint8Array(20).fill(2),
      asset: { kind: 'native' as const }, amount: 10n ** 15n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `evm-${nonce}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    };
    const template = { nonce, gasLimit: 21_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
    const digest = evmSigningDigest(evmTransaction(fields, template));
    const intent = encodeIntent(fields);
    const res = await on(shard).sign({
      vaultId: VAULT, path, scheme: Scheme.ECDSA, digests: [digest], requestId: `txn_evm_${nonce}`,
      authorization: {
        intent, intentSignature: signIntent(intent, apiSecret), apiKeyId: 'key_1',
        template: encodeBlob('evm-template', { nonce, gasLimit: '21000', maxFeePerGas: String(template.maxFeePerGas), maxPriorityFeePerGas: String(template.maxPriorityFeePerGas) }),
      },
    }, { deadline: Date.now() + 60_000 });
    t.ok(secp256k1.verify(res.signatures[0]!, digest, derived.toBytes(true), { prehash: false }), `${what}: the ECDSA signature verifies (noble)`);
  };
  await signTaproot('a', 'generated');

  // A copy of shard a's store from before the reshare (taken with the coordinator stopped, as "Backups" says).
  const dirA = join(cluster.dir, 'coordinator-a');
  const copy = join(cluster.dir, 'coordinator-a-copy');
  const restart = async (prepare: () => void) => {
    await cluster.shards.get('a')!.proc!.kill('SIGTERM');
    prepare();
    await cluster.startShard('a', env);
    await waitUntil(async () => (await shards.states()).every((s) => s.state === 'reachable' && s.nodes.length === 3), 20_000, 'nodes back on shard a');
  };
  await restart(() => cpSync(dirA, copy, { recursive: true }));
  const reshared = (await on('a').reshare({ vaultId: VAULT, requestId: `${VAULT}:job_2` }, { deadline: Date.now() + 90_000 })).vault!;
  t.equal(reshared.epoch, 1, 'reshared to epoch 1');

  // (b) Restored from the copy: the record says epoch 0, the nodes hold epoch 1. As the nodes attach,
  // the coordinator brings the record forward.
  await restart(() => {
    rmSync(dirA, { recursive: true, force: true });
    cpSync(copy, dirA, { recursive: true });
  });
  let started = Date.now();
  await waitUntil(async () => (await on('a').getVault({ vaultId: VAULT })).vault?.epoch === 1, 20_000, 'the restored record comes forward to epoch 1');
  t.comment(`forward after the restore: ${Date.now() - started} ms from the nodes being back`);
  t.match((await on('a').getVault({ vaultId: VAULT })).vault, { epoch: 1, rotation: 1, state: 'active', threshold: 2 }, 'the record is at the nodes\' epoch');
  await signTaproot('a', 'after a restore older than the reshare');
  await signEcdsa('a', 'after a restore older than the reshare');

  // (a) The data directory deleted: the first request for the vault rebuilds its record from the nodes.
  await restart(() => rmSync(dirA, { recursive: true, force: true }));
  started = Date.now();
  const rebuilt = (await on('a').getVault({ vaultId: VAULT }, { deadline: Date.now() + 20_000 })).vault!;
  t.comment(`lazy rebuild on the first request: ${Date.now() - started} ms`);
  t.match(rebuilt, { vaultId: VAULT, owner: ORG, epoch: 1, state: 'active', threshold: 2 }, 'rebuilt on the first request');
  t.equal(bytesToHex(rebuilt.publicKey), groupKey, 'the same group key');
  t.equal(bytesToHex(rebuilt.chainCode), chainCode, 'the same chain code');
  t.same(rebuilt.committee.map((m) => m.index), [1, 2, 3]);
  await signEcdsa('a', 'after the store was deleted');
  await signTaproot('a', 'after the store was deleted');
  // An id no node holds stays unknown.
  await t.rejects(on('a').getVault({ vaultId: 'vlt_nobody' }), { code: 'unknown_vault' }, 'a vault no node holds is unknown');

  // (d) The move, as the API's operator route runs it (api/coordinator/move-vault.ts) over the API's own
  // record of the vault: shard b rebuilds the record from the nodes, the record switches, a releases it.
  const store = await openStore({ dataDir: join(cluster.dir, 'api-store') });
  t.teardown(() => store.close());
  const record: VaultRecord = {
    id: VAULT, org: ORG, name: null, tier: 'hosted', state: 'active', rotation: 1, public_key: groupKey, chain_code: chainCode, policy: null,
    end_user_subject: null, end_user_auth: false, created_at: new Date().toISOString(), updated_at: new Date().toISOString(), coordinator_shard: 'a',
  };
  await store.batch([VAULTS.putOp(VAULT, record)]);
  const move = { store, vaultOp: (v: VaultRecord) => VAULTS.putOp(v.id, v), shards, vaultId: VAULT };
  await t.rejects(moveVault({ ...move, to: 'c' }), { code: 'invalid_request' }, 'a shard that is not configured is refused');
  t.equal((await VAULTS.in(store).get(VAULT))?.coordinator_shard, 'a', 'and changes nothing');
  started = Date.now();
  const moved = await moveVault({ ...move, to: 'b' });
  t.comment(`move: ${Date.now() - started} ms`);
  t.same(moved, { vault: VAULT, from: 'a', to: 'b', epoch: 1, released: true }, 'moved to b at epoch 1, released by a');
  t.equal((await VAULTS.in(store).get(VAULT))?.coordinator_shard, 'b', 'the API\'s record names shard b');
  t.ok(await COORDINATOR_SHARDS.in(store).get('b'), 'shard b is among the shards holding vaults');
  t.match((await on('b').getVault({ vaultId: VAULT })).vault, { epoch: 1, state: 'active' }, 'shard b holds the record');
  await signTaproot('b', 'on shard b after the move');
  await signEcdsa('b', 'on shard b after the move');
  await t.rejects(on('a').getVault({ vaultId: VAULT }), { code: 'vault_moved' }, 'shard a refuses the vault it released');
  const spend = taprootSpend(ORG, apiSecret, groupKey, chainCode);
  await t.rejects(on('a').sign({
    vaultId: VAULT, path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [spend.digest], requestId: 'txn_tr_moved',
    authorization: { intent: spend.intent, intentSignature: spend.signature, apiKeyId: 'key_1', template: spend.template },
  }), { code: 'vault_moved' }, 'shard a signs nothing for it');
  // A rebuild on a does not take it back.
  const again = await on('a').rebuildVaults({ vaultIds: [VAULT] });
  t.match(again.vaults, [{ vaultId: VAULT, outcome: 'moved' }], 'a rebuild leaves the released vault released');
  // The move asked again (say its release had not been confirmed) only makes sure the others release it.
  t.same(await moveVault({ ...move, to: 'b' }), { vault: VAULT, from: 'b', to: 'b', epoch: 1, released: true }, 'a repeated move is idempotent');
});
