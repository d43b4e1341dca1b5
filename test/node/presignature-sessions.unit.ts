// Presignature pools at the node's session layer (docs/protocols/pools.md): honest nodes run their real
// session factories (node-protocols.ts) over real sealed stores with rollback anchors, and this file
// plays the coordinator, honest or not. A presigning session seals one entry per id at every signer; a
// signing session that names an entry runs only the online round and its signature verifies under the
// key; and every misuse a coordinator could try is refused before anything is released: a replayed
// entry id, an unknown one, one of another path, signer set or epoch, one of a session the customer did
// not authorize, one taken before the node restarted; a node without an anchor keeps no entries.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { create } from '@bufbuild/protobuf';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { PresignatureStore } from '../../node/storage/presignature-store.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { SessionRefused, type SessionContext } from '../../node/runtime/session-host.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import type { SignAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { encodeOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { presignParams, presignResult, signParams, signResult } from '../../core/session/session-contract.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { committee, type Committee } from '../protocols/ecdsa/harness.ts';
import { checkSignature } from '../protocols/ecdsa/sign-cases.ts';
import { claimsOnlyLedger } from './claims-only-ledger.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

const c: Committee = committee(3, 2, 'presignature-sessions');
const pkg = c.keys.get(1)!.pkg;
const keyId = pkg.keyId;
const members: PinnedMember[] = [1, 2, 3].map((i) => ({ index: i, nodeId: `node-${i}`, signingKey: bytesToHex(randomBytes(32)), encryptionKey: bytesToHex(randomBytes(32)) }));
const party = (m: PinnedMember): Party => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: Uint8Array.from(Buffer.from(m.signingKey, 'hex')), encryptionKey: Uint8Array.from(Buffer.from(m.encryptionKey, 'hex')) });
const entry = () => bytesToHex(randomBytes(16));
const digest = (label: string) => new Uint8Array(secp256k1.utils.randomSecretKey()).map((b, i) => (i === 0 ? label.length : b));

interface Node {
  index: number;
  dir: string;
  store: SealedStore;
  vault: VaultShareStore;
  pool: PresignatureStore;
  /** Whether the customer's authorization passes at this node. */
  authorized: boolean;
  factory: (ctx: SessionContext) => Promise<PartyProtocol>;
}

async function openNode(index: number, dir: string, anchored: boolean): Promise<Node> {
  const storageKey = new Uint8Array(Buffer.from(`${index}`.padStart(64, '0'), 'hex'));
  const anchor = anchored ? new FileRollbackAnchor(join(dir, 'anchor'), storageKey) : undefined;
  const store = await SealedStore.open(join(dir, 'db'), storageKey, anchor ? { anchor } : {});
  const vault = new VaultShareStore(store);
  const pool = new PresignatureStore(store);
  const node: Node = { index, dir, store, vault, pool, authorized: true, factory: undefined as unknown as Node['factory'] };
  // The signing request's own checks are sign-authorizer.ts's; here they pass or fail as the test says.
  const authorizer = { authorize: async () => {
    if (!node.authorized) throw new SessionRefused('bad_intent_signature', 'the intent signature does not verify');
    return {};
  } } as unknown as SignAuthorizer;
  node.factory = nodeProtocols({ vault, authorizer, ledger: claimsOnlyLedger(store), trust: new TrustRegistry(store, { operatorKeys: [] }), presignatures: pool } as Parameters<typeof nodeProtocols>[0]);
  return node;
}

async function newNode(t: Test, index: number, anchored = true): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), 'presig-session-'));
  const node = await openNode(index, dir, anchored);
  const k = c.keys.get(index)!;
  await node.vault.putNew(keyId, { key: { share: new SecretShare(index, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: 'acme', committee: members, tier: 'hosted' });
  await node.store.putSecret(`key/${keyId}/current/ot`, encodeOtSetup(c.ots.get(index)!));
  t.teardown(async () => {
    await node.store.close().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  });
  return node;
}

function context(protocol: Protocol, signers: number[], me: number, params: Uint8Array, sessionId: Uint8Array): SessionContext {
  const parties = members.filter((m) => signers.includes(m.index)).map(party);
  return { open: create(SessionOpenSchema, { sessionId, protocol, keyId, parties, params, deadlineMs: deadlineOf(sessionId) }), myIndex: me, parties };
}

type Outcome = { ok: true; results: Map<number, Uint8Array> } | { ok: false; refused: Map<number, string>; aborted: Map<number, string>; sentBy: Map<number, number> };

/**
 * Runs a session among `nodes` as an honest relay would: open at every node (a refusal there is
 * final for that node), start the others and route every message until nothing moves. `sentBy` counts
 * the messages that left each node.
 */
async function session(nodes: Node[], protocol: Protocol, params: Uint8Array): Promise<Outcome> {
  const signers = nodes.map((n) => n.index);
  const sessionId = newSessionId();
  const refused = new Map<number, string>();
  const aborted = new Map<number, string>();
  const results = new Map<number, Uint8Array>();
  const runs = new Map<number, PartyProtocol>();
  for (const n of nodes) {
    try {
      runs.set(n.index, await n.factory(context(protocol, signers, n.index, params, sessionId)));
    } catch (err) {
      refused.set(n.index, (err as { code?: string }).code ?? String(err));
    }
  }
  const sentBy = new Map<number, number>();
  const queue: { from: number; to: number | 'all'; round: number; payload: Uint8Array }[] = [];
  const apply = async (me: number, step: Step) => {
    if (step.kind === 'abort') {
      aborted.set(me, step.code);
      return;
    }
    for (const o of step.out) queue.push({ from: me, ...o });
    sentBy.set(me, (sentBy.get(me) ?? 0) + step.out.length);
    if (step.kind === 'done') {
      await step.commit?.();
      results.set(me, step.result);
    }
  };
  for (const [me, run] of runs) {
    await apply(me, await run.start());
    await run.admit?.();
  }
  while (queue.length) {
    const m = queue.shift()!;
    for (const [me, run] of runs) {
      if (me === m.from || (m.to !== 'all' && m.to !== me) || results.has(me) || aborted.has(me)) continue;
      await apply(me, await run.deliver(m.from, m.round, m.payload, m.to === 'all'));
    }
  }
  for (const r of runs.values()) r.dispose();
  if (refused.size || aborted.size || results.size !== nodes.length) return { ok: false, refused, aborted, sentBy };
  return { ok: true, results };
}

const presignWith = (nodes: Node[], entryIds: string[], path: number[] = [], epoch = 0) => session(nodes, Protocol.PRESIGN_ECDSA, presignParams.encode({ keyId, epoch, path, entryIds }));

function signWith(nodes: Node[], digests: Uint8Array[], presignatures?: string[], path: number[] = [], epoch = 0) {
  return session(nodes, Protocol.SIGN_ECDSA, signParams.encode({
    keyId, epoch, path, scheme: 'ecdsa', digests, intent: new Uint8Array(), intentSignature: new Uint8Array(64), apiKeyId: '', template: new Uint8Array(), endUserToken: '',
    ...(presignatures ? { presignatures } : {}),
  }));
}

function expectRefused(t: Test, out: Outcome, codes: Record<number, string>, what: string) {
  t.notOk(out.ok, `${what}: the session fails`);
  if (out.ok) return;
  for (const [i, code] of Object.entries(codes)) {
    t.equal(out.refused.get(Number(i)), code, `${what}: node ${i} refuses with ${code}`);
    t.equal(out.sentBy.get(Number(i)) ?? 0, 0, `${what}: nothing left node ${i}`);
  }
}

t.test('a presigning session seals an entry per id; a signing naming them runs the online round only', async (t) => {
  const [n1, n2] = [await newNode(t, 1), await newNode(t, 2)];
  const ids = [entry(), entry()];
  const made = await presignWith([n1, n2], ids);
  t.ok(made.ok, 'the presigning session completes');
  if (made.ok) for (const [i, r] of made.results) t.same(presignResult.decode(r), { keyId, epoch: 0, entryIds: ids }, `node ${i} reports the entries`);
  t.equal(await n1.pool.count(keyId, 0), 2, 'node 1 holds two entries');
  t.equal(await n2.pool.count(keyId, 0), 2, 'node 2 too');

  const digests = [digest('a'), digest('b')];
  const signed = await signWith([n1, n2], digests, ids);
  t.ok(signed.ok, 'the pooled signing completes');
  if (!signed.ok) return;
  const r1 = signResult.decode(signed.results.get(1)!);
  const r2 = signResult.decode(signed.results.get(2)!);
  t.same(r1.signatures, r2.signatures, 'both signers output the same signatures');
  for (const [i, sig] of r1.signatures.entries()) {
    const hex = bytesToHex(sig);
    await checkSignature(t, { r: hex.slice(0, 64), s: hex.slice(64), recovery: r1.recoveryIds![i]!, compact: hex, publicKey: pkg.groupKey }, bytesToHex(digests[i]!), pkg.groupKey);
  }
  t.equal(await n1.pool.count(keyId, 0), 0, 'the entries are gone from node 1');
  t.equal(await n2.pool.count(keyId, 0), 0, 'and from node 2');

  expectRefused(t, await signWith([n1, n2], [digest('c')], [ids[0]!]), { 1: 'presignature_used', 2: 'presignature_used' }, 'a replayed entry id');
  expectRefused(t, await signWith([n1, n2], [digest('c')], [entry()]), { 1: 'presignature_unknown', 2: 'presignature_unknown' }, 'an unknown entry id');

  // Node 1 restarts: the take is on disk.
  await n1.store.close();
  const again = await openNode(1, n1.dir, true);
  t.teardown(() => again.store.close().catch(() => undefined));
  expectRefused(t, await signWith([again, n2], [digest('d')], [ids[1]!]), { 1: 'presignature_used', 2: 'presignature_used' }, 'an entry used before a restart');

  const full = await signWith([again, n2], [digest('e')]);
  t.ok(full.ok, 'the full protocol still signs');
});

t.test('entries are bound to their path, signer set and epoch', async (t) => {
  const nodes = [await newNode(t, 1), await newNode(t, 2), await newNode(t, 3)];
  const [n1, n2, n3] = nodes as [Node, Node, Node];
  const path = [0, 7];
  const onPath = entry();
  t.ok((await presignWith([n1, n2], [onPath], path)).ok, 'an entry for path 0/7');
  expectRefused(t, await signWith([n1, n2], [digest('p')], [onPath], []), { 1: 'presignature_wrong_path', 2: 'presignature_wrong_path' }, 'used for the root key');
  expectRefused(t, await signWith([n1, n2], [digest('p')], [onPath], [0, 8]), { 1: 'presignature_wrong_path', 2: 'presignature_wrong_path' }, 'used for path 0/8');
  expectRefused(t, await signWith([n1, n3], [digest('s')], [onPath], path), { 1: 'presignature_wrong_signers', 3: 'presignature_unknown' }, 'used by another signer set');
  const d = digest('ok');
  const signed = await signWith([n1, n2], [d], [onPath], path);
  t.ok(signed.ok, 'the right request signs with it');
  if (signed.ok) {
    const r = signResult.decode(signed.results.get(1)!);
    const key = derive(pkg.groupKey, pkg.chainCode, path).publicKey.toHex(true);
    t.equal(bytesToHex(r.publicKey), key, 'under the derived key');
    const hex = bytesToHex(r.signatures[0]!);
    await checkSignature(t, { r: hex.slice(0, 64), s: hex.slice(64), recovery: r.recoveryIds![0]!, compact: hex, publicKey: key }, bytesToHex(d), key);
  }

  // A reshare moves the key to epoch 1 (the same share stands in for the new one here).
  const old = entry();
  t.ok((await presignWith([n1, n2], [old])).ok, 'an entry at epoch 0');
  for (const n of [n1, n2]) {
    const k = c.keys.get(n.index)!;
    await n.vault.putPending(keyId, { key: { share: new SecretShare(n.index, exposeScalar(k.share, 'share')), pkg: { ...k.pkg, epoch: 1 } }, owner: 'acme', committee: members, tier: 'hosted' });
    await n.vault.promote(keyId, 1);
  }
  expectRefused(t, await signWith([n1, n2], [digest('x')], [old], [], 1), { 1: 'presignature_wrong_epoch', 2: 'presignature_wrong_epoch' }, 'an epoch-0 entry at epoch 1');
  expectRefused(t, await signWith([n1, n2], [digest('x')], [old], [], 0), { 1: 'epoch_mismatch', 2: 'epoch_mismatch' }, 'a request at the old epoch');
  t.equal(await n1.pool.purge(keyId, 1), 1, 'the old epoch\'s entry is deleted by the purge');
});

t.test('an entry is taken only after the customer\'s authorization passes', async (t) => {
  const [n1, n2] = [await newNode(t, 1), await newNode(t, 2)];
  const id = entry();
  t.ok((await presignWith([n1, n2], [id])).ok, 'an entry');
  n2.authorized = false;
  const refused = await signWith([n1, n2], [digest('u')], [id]);
  t.notOk(refused.ok, 'an unauthorized request fails');
  if (!refused.ok) t.equal(refused.refused.get(2), 'bad_intent_signature', 'node 2 refuses it');
  await n2.pool.check(keyId, [id], { epoch: 0, signers: [1, 2], path: [], publicKey: pkg.groupKey });
  t.pass('node 2 did not take its entry');
  n2.authorized = true;
});

t.test('the presigning session is checked as a signing session would be', async (t) => {
  const [n1, n2] = [await newNode(t, 1), await newNode(t, 2)];
  const ids = [entry()];
  expectRefused(t, await presignWith([n1, n2], ids, [], 1), { 1: 'epoch_mismatch', 2: 'epoch_mismatch' }, 'an epoch the nodes do not hold');
  expectRefused(t, await presignWith([n1], ids), { 1: 'bad_parties' }, 'fewer signers than the threshold');
  expectRefused(t, await presignWith([n1, n2], ids, [0x80000000]), { 1: 'bad_params', 2: 'bad_params' }, 'a hardened path');
  t.ok((await presignWith([n1, n2], ids)).ok, 'a proper one completes');
  expectRefused(t, await presignWith([n1, n2], ids), { 1: 'presignature_exists', 2: 'presignature_exists' }, 'the same entry ids again');
});

t.test('a node without a rollback anchor keeps no entries and signs with the full protocol', async (t) => {
  const [n1, n2] = [await newNode(t, 1, false), await newNode(t, 2)];
  expectRefused(t, await presignWith([n1, n2], [entry()]), { 1: 'presignature_pool_unanchored' }, 'presigning');
  expectRefused(t, await signWith([n1, n2], [digest('n')], [entry()]), { 1: 'presignature_pool_unanchored', 2: 'presignature_unknown' }, 'a pooled signing');
  t.ok((await signWith([n1, n2], [digest('n')])).ok, 'the full protocol signs');
});
