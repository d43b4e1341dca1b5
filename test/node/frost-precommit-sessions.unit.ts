// Precommitted FROST nonces at the node's session layer (docs/protocols/pools.md "FROST"): honest nodes
// run their real session factories (node-protocols.ts) over real sealed stores with rollback anchors and
// real identity keys, and this file plays the coordinator, honest or not. A precommit session seals each
// node's pairs and reports their commitments signed by its identity key; a signing naming them runs one
// round and its Taproot signature verifies; every misuse is refused before anything leaves: a replayed
// entry, another node's entry, altered own commitments, commitments not signed by their signer, a
// non-point, an entry of another path, signer set, suite or epoch, one taken before a restart, an
// unauthorized request (which takes nothing). A node without an anchor keeps no pairs.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { create } from '@bufbuild/protobuf';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { FileRollbackAnchor } from '../../node/storage/rollback-anchor.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { FrostNonceStore } from '../../node/storage/frost-nonce-store.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import { NodeIdentity } from '../../node/runtime/identity.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import { SessionRefused, type SessionContext } from '../../node/runtime/session-host.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import type { SignAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { precommitParams, precommitResult, signParams, signResult } from '../../core/session/session-contract.ts';
import type { PrecommittedNonce } from '../../core/session/session-params.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { exposeScalar, pointHex } from '../../node/protocols/math/curve.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { dkgKeys } from '../protocols/frost/keys.ts';
import { claimsOnlyLedger } from './claims-only-ledger.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

const keys = dkgKeys(3, 2, 'frost-precommit-sessions');
const pkg = keys.get(1)!.pkg;
const keyId = pkg.keyId;
const identities = new Map([1, 2, 3].map((i) => [i, new NodeIdentity(new Uint8Array(randomBytes(32)), new Uint8Array(randomBytes(32)))]));
const members: PinnedMember[] = [1, 2, 3].map((i) => ({ index: i, nodeId: `node-${i}`, signingKey: bytesToHex(identities.get(i)!.signingKey), encryptionKey: bytesToHex(identities.get(i)!.encryptionKey) }));
const party = (m: PinnedMember): Party => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: Uint8Array.from(Buffer.from(m.signingKey, 'hex')), encryptionKey: Uint8Array.from(Buffer.from(m.encryptionKey, 'hex')) });
const digest = (label: string) => sha256(new TextEncoder().encode(label));

interface Node {
  index: number;
  dir: string;
  store: SealedStore;
  vault: VaultShareStore;
  pool: FrostNonceStore;
  authorized: boolean;
  factory: (ctx: SessionContext) => Promise<PartyProtocol>;
}

async function openNode(index: number, dir: string, anchored: boolean): Promise<Node> {
  const storageKey = new Uint8Array(Buffer.from(`${index}`.padStart(64, '0'), 'hex'));
  const anchor = anchored ? new FileRollbackAnchor(join(dir, 'anchor'), storageKey) : undefined;
  const store = await SealedStore.open(join(dir, 'db'), storageKey, anchor ? { anchor } : {});
  const vault = new VaultShareStore(store);
  const pool = new FrostNonceStore(store);
  const node: Node = { index, dir, store, vault, pool, authorized: true, factory: undefined as unknown as Node['factory'] };
  const authorizer = { authorize: async () => {
    if (!node.authorized) throw new SessionRefused('bad_intent_signature', 'the intent signature does not verify');
    return {};
  } } as unknown as SignAuthorizer;
  node.factory = nodeProtocols({ vault, authorizer, ledger: claimsOnlyLedger(store), trust: new TrustRegistry(store, { operatorKeys: [] }), frostNonces: pool, identity: identities.get(index)! } as Parameters<typeof nodeProtocols>[0]);
  return node;
}

async function newNode(t: Test, index: number, anchored = true): Promise<Node> {
  const dir = mkdtempSync(join(tmpdir(), 'frost-pc-session-'));
  const node = await openNode(index, dir, anchored);
  const k = keys.get(index)!;
  await node.vault.putNew(keyId, { key: { share: new SecretShare(index, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: 'acme', committee: members, tier: 'hosted' });
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

/** Runs a session among `nodes` as an honest relay would; `sentBy` counts the messages that left each node. */
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
    try {
      await run.admit?.();
      await apply(me, await run.start());
    } catch (err) {
      refused.set(me, (err as { code?: string }).code ?? String(err));
      runs.delete(me);
    }
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

/** Precommits `count` pairs at every node; the entries each reported, with their party. */
async function precommit(t: Test, nodes: Node[], count: number, opts: { path?: number[]; scheme?: 'taproot' | 'bip340'; epoch?: number } = {}): Promise<Map<number, PrecommittedNonce[]>> {
  const out = await session(nodes, Protocol.PRECOMMIT_FROST, precommitParams.encode({ keyId, epoch: opts.epoch ?? 0, path: opts.path ?? [], scheme: opts.scheme ?? 'taproot', count }));
  t.ok(out.ok, 'the precommit session completes');
  if (!out.ok) throw new Error(`precommit failed: ${JSON.stringify([...out.refused, ...out.aborted])}`);
  return new Map([...out.results].map(([i, r]) => [i, precommitResult.decode(r).entries.map((e) => ({ party: i, ...e }))]));
}

function signWith(nodes: Node[], digests: Uint8Array[], precommitted?: PrecommittedNonce[][], opts: { path?: number[]; scheme?: 'taproot' | 'bip340'; epoch?: number } = {}) {
  return session(nodes, Protocol.SIGN_SCHNORR, signParams.encode({
    keyId, epoch: opts.epoch ?? 0, path: opts.path ?? [], scheme: opts.scheme ?? 'taproot', digests, intent: new Uint8Array(), intentSignature: new Uint8Array(64), apiKeyId: '', template: new Uint8Array(), endUserToken: '',
    ...(precommitted ? { precommitted } : {}),
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

t.test('precommit seals each node\'s pairs; a signing naming them runs one round and verifies', async (t) => {
  const [n1, n2] = [await newNode(t, 1), await newNode(t, 2)];
  const entries = await precommit(t, [n1, n2], 3);
  t.equal(entries.get(1)!.length, 3, 'node 1 reports three entries');
  t.not(entries.get(1)![0]!.entryId, entries.get(2)![0]!.entryId, 'each node draws its own entry ids');
  t.equal(await n1.pool.count(keyId, 0), 3, 'node 1 holds three pairs');
  t.equal(await n2.pool.count(keyId, 0), 3, 'node 2 too');

  const digests = [digest('a'), digest('b')];
  const lists = digests.map((_, i) => [entries.get(1)![i]!, entries.get(2)![i]!]);
  const signed = await signWith([n1, n2], digests, lists);
  t.ok(signed.ok, 'the precommitted signing completes');
  if (!signed.ok) return;
  const r1 = signResult.decode(signed.results.get(1)!);
  t.same(r1.signatures, signResult.decode(signed.results.get(2)!).signatures, 'both signers output the same signatures');
  for (const [i, sig] of r1.signatures.entries()) t.ok(schnorr.verify(sig, digests[i]!, outputKey(pkg.groupKey)), `signature ${i} verifies under the Taproot output key`);
  t.equal(await n1.pool.count(keyId, 0), 1, 'the two used pairs are gone from node 1');

  const third = [[entries.get(1)![2]!, entries.get(2)![2]!]];
  expectRefused(t, await signWith([n1, n2], [digest('c')], lists.slice(0, 1)), { 1: 'nonce_used', 2: 'nonce_used' }, 'a replayed entry');
  // Node 1 is named with node 2's entry (commitments and signature as node 2 made them, party 1).
  const stolen = [[{ ...entries.get(2)![2]!, party: 1 }, entries.get(2)![2]!]];
  expectRefused(t, await signWith([n1, n2], [digest('c')], stolen), { 1: 'wrong_commitment', 2: 'wrong_commitment' }, 'another node\'s entry');
  // Node 1's own commitments altered, re-signed by nobody: every node sees the signature fail.
  const other = entries.get(2)![2]!;
  const altered = [[{ ...third[0]![0]!, binding: other.binding }, third[0]![1]!]];
  expectRefused(t, await signWith([n1, n2], [digest('c')], altered), { 1: 'wrong_commitment', 2: 'wrong_commitment' }, 'altered own commitments');
  // A commitment that is not a point.
  const offCurve = [[{ ...third[0]![0]!, hiding: '02' + 'f'.repeat(64) }, third[0]![1]!]];
  expectRefused(t, await signWith([n1, n2], [digest('c')], offCurve), { 1: 'bad_commitment', 2: 'bad_commitment' }, 'a non-point');
  // Node 1 restarts: its take is on disk.
  await n1.store.close();
  const again = await openNode(1, n1.dir, true);
  t.teardown(() => again.store.close().catch(() => undefined));
  const fresh2 = await precommit(t, [again, n2], 1);
  expectRefused(t, await signWith([again, n2], [digest('d')], [[entries.get(1)![0]!, fresh2.get(2)![0]!]]), { 1: 'nonce_used' }, 'an entry taken before a restart');
  const last = await signWith([again, n2], [digest('e')], third);
  t.ok(last.ok, 'the untouched entries still sign after the refusals');
  const full = await signWith([again, n2], [digest('f')]);
  t.ok(full.ok, 'the two-round protocol still signs');
});

t.test('entries are bound to their path, suite, signer set and epoch; unauthorized requests take nothing', async (t) => {
  const [n1, n2, n3] = [await newNode(t, 1), await newNode(t, 2), await newNode(t, 3)];
  const path = [86, 0, 7];
  const onPath = await precommit(t, [n1, n2], 1, { path });
  const list = [[onPath.get(1)![0]!, onPath.get(2)![0]!]];
  expectRefused(t, await signWith([n1, n2], [digest('p')], list, { path: [86, 0, 8] }), { 1: 'wrong_commitment', 2: 'wrong_commitment' }, 'another path');
  expectRefused(t, await signWith([n1, n2], [digest('p')], list, { path, scheme: 'bip340' }), { 1: 'wrong_commitment', 2: 'wrong_commitment' }, 'another suite');
  expectRefused(t, await signWith([n1, n2], [digest('p')], list, { path, epoch: 1 }), { 1: 'epoch_mismatch', 2: 'epoch_mismatch' }, 'another epoch');
  const trio = await precommit(t, [n1, n2, n3], 1, { path });
  expectRefused(t, await signWith([n1, n2], [digest('p')], [[trio.get(1)![0]!, trio.get(2)![0]!]], { path }), { 1: 'wrong_commitment', 2: 'wrong_commitment' }, 'another signer set');
  n2.authorized = false;
  expectRefused(t, await signWith([n1, n2], [digest('p')], list, { path }), { 2: 'bad_intent_signature' }, 'an unauthorized request');
  n2.authorized = true;
  t.equal(await n2.pool.count(keyId, 0), 2, 'node 2 took nothing for the unauthorized request');
  // Node 1 authorized and used its pair: it never signs with it again, whatever the request.
  expectRefused(t, await signWith([n1, n2], [digest('p2')], list, { path }), { 1: 'nonce_used' }, 'node 1\'s pair after it sent a share');
  const again = await precommit(t, [n1, n2], 1, { path });
  const ok = await signWith([n1, n2], [digest('p')], [[again.get(1)![0]!, again.get(2)![0]!]], { path });
  t.ok(ok.ok, 'the entry signs for its own path');
  if (ok.ok) t.ok(schnorr.verify(signResult.decode(ok.results.get(1)!).signatures[0]!, digest('p'), outputKey(pointHex(derive(pkg.groupKey, pkg.chainCode, path).publicKey))), 'under the derived output key');
  const bip = await precommit(t, [n1, n3], 1, { scheme: 'bip340' });
  const b = await signWith([n1, n3], [digest('q')], [[bip.get(1)![0]!, bip.get(3)![0]!]], { scheme: 'bip340' });
  t.ok(b.ok, 'a BIP-340 signing with precommitted nonces completes');
  if (b.ok) t.ok(schnorr.verify(signResult.decode(b.results.get(1)!).signatures[0]!, digest('q'), Buffer.from(pkg.groupKey, 'hex').subarray(1)), 'and verifies under the x-only key');
});

t.test('an old epoch\'s pair is refused at the node\'s epoch check, and swept', async (t) => {
  const [n1, n2] = [await newNode(t, 1), await newNode(t, 2)];
  await precommit(t, [n1, n2], 2);
  t.equal(await n1.pool.sweep(async () => 1), 2, 'a key moved to epoch 1 loses its epoch-0 pairs');
  t.equal(await n1.pool.count(keyId, 1), 0);
});

t.test('a node without a rollback anchor keeps no pairs and signs with two rounds', async (t) => {
  const [n1, n2] = [await newNode(t, 1, false), await newNode(t, 2)];
  const out = await session([n1, n2], Protocol.PRECOMMIT_FROST, precommitParams.encode({ keyId, epoch: 0, path: [], scheme: 'taproot', count: 1 }));
  expectRefused(t, out, { 1: 'nonce_pool_unanchored' }, 'precommit without an anchor');
  const full = await signWith([n1, n2], [digest('x')]);
  t.ok(full.ok, 'two rounds still sign');
});

t.test('sign parameters: precommitted nonces are Schnorr only, one list per digest, fields checked', async (t) => {
  const base = { keyId, epoch: 0, path: [], scheme: 'taproot' as const, digests: [digest('a')], intent: new Uint8Array(), intentSignature: new Uint8Array(64), apiKeyId: '', template: new Uint8Array(), endUserToken: '' };
  const e: PrecommittedNonce = { party: 1, entryId: '0a'.repeat(16), hiding: '02' + '11'.repeat(32), binding: '03' + '22'.repeat(32), signature: new Uint8Array(64) };
  t.same(signParams.decode(signParams.encode({ ...base, precommitted: [[e]] })).precommitted, [[e]], 'round-trips');
  t.throws(() => signParams.encode({ ...base, scheme: 'ecdsa', precommitted: [[e]] }), { code: 'bad_params' }, 'not for ECDSA');
  t.throws(() => signParams.encode({ ...base, precommitted: [[e], [e]] }), { code: 'bad_params' }, 'one list per digest');
  t.throws(() => signParams.encode({ ...base, precommitted: [[{ ...e, hiding: '02' }]] }), { code: 'bad_params' }, 'a commitment is 33 bytes');
  t.throws(() => signParams.encode({ ...base, precommitted: [[{ ...e, extra: 1 } as PrecommittedNonce]] }), { code: 'bad_params' }, 'no unknown field');
  t.throws(() => precommitResult.encode({ keyId, epoch: 0, entries: [e] }), { code: 'bad_params' }, 'a node reports its own entries, without a party');
});
