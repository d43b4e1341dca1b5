// OT retirement cannot be undone, and a peer gets at most one probe of Δ per pair (DKLs23 over KOS;
// GHSA-7f6p-phw2-8253). An honest node runs its real ECDSA session factory over a real sealed store;
// its peers are the pure presigning protocol, one of them tampering with its OT-extension matrix so
// that the node's consistency check fails. What must hold: a second run over a busy pair is refused
// (no concurrent probes), a retirement survives a concurrent session's abort (no stale snapshot
// overwrites it), and a retired pair is refused before anything derived from its material leaves.
import t, { type Test } from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { bytesToHex } from '@noble/hashes/utils.js';
import { taggedHash } from '../../core/codec/transcript.ts';
import { create } from '@bufbuild/protobuf';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore, type PinnedMember } from '../../node/storage/vault-shares.ts';
import { nodeProtocols } from '../../node/runtime/sessions/node-protocols.ts';
import { runProtocol, decodeBatch, encodeBatch } from '../../node/runtime/protocols/run-protocol.ts';
import type { PartyProtocol, Step } from '../../node/runtime/party-protocol.ts';
import type { SessionContext } from '../../node/runtime/session-host.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import type { SignAuthorizer } from '../../node/runtime/authorization/sign-authorizer.ts';
import { encodeOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { ecdsaPresign, R1_KIND } from '../../node/protocols/ecdsa/presign.ts';
import { decodeBlob, encodeBlob } from '../../core/codec/blob.ts';
import { signParams } from '../../core/session/session-contract.ts';
import { SecretShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { SessionOpenSchema, Protocol, type Party } from '../../proto/gen/mpc/v1/session_pb.ts';
import { committee, type Committee } from '../protocols/ecdsa/harness.ts';
import { claimsOnlyLedger } from './claims-only-ledger.ts';
import { deadlineOf, newSessionId } from './session-ids.ts';

// The signing request's own checks (and the intent ledger) are not what this file is about: every
// request is authorized.
const authorizeAll = { authorize: async () => ({}) } as unknown as SignAuthorizer;

const ids = [1, 2, 3].map((i) => ({ index: i, nodeId: `node-${i}`, signingKey: bytesToHex(randomBytes(32)), encryptionKey: bytesToHex(randomBytes(32)) }));
const party = (m: PinnedMember): Party => ({ $typeName: 'mpc.v1.Party', nodeId: m.nodeId, index: m.index, signingKey: Uint8Array.from(Buffer.from(m.signingKey, 'hex')), encryptionKey: Uint8Array.from(Buffer.from(m.encryptionKey, 'hex')) });

async function honestNode(t: Test, c: Committee) {
  const dir = mkdtempSync(join(tmpdir(), 'ot-retire-'));
  const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const vault = new VaultShareStore(store);
  const k = c.keys.get(1)!;
  const keyId = k.pkg.keyId;
  await vault.putNew(keyId, { key: { share: new SecretShare(1, exposeScalar(k.share, 'share')), pkg: k.pkg }, owner: 'acme', committee: ids, tier: 'hosted' });
  // The OT setup as the OT-setup session stores it.
  await store.putSecret(`key/${keyId}/current/ot`, encodeOtSetup(c.ots.get(1)!));
  const factory = nodeProtocols({ vault, authorizer: authorizeAll, ledger: claimsOnlyLedger(store), trust: new TrustRegistry(store, { operatorKeys: [] }) } as Parameters<typeof nodeProtocols>[0]);
  let lastSession = new Uint8Array();
  const open = (signers: number[]): Promise<PartyProtocol> => {
    const params = signParams.encode({
      keyId, epoch: k.pkg.epoch, path: [], scheme: 'ecdsa', digests: [new Uint8Array(32).fill(0x11)], intent: new Uint8Array(), intentSignature: new Uint8Array(64),
      apiKeyId: '', template: new Uint8Array(), endUserToken: '',
    });
    const parties = ids.filter((m) => signers.includes(m.index)).map(party);
    lastSession = newSessionId();
    const ctx: SessionContext = {
      open: create(SessionOpenSchema, { sessionId: lastSession, protocol: Protocol.SIGN_ECDSA, keyId, parties, params, deadlineMs: deadlineOf(lastSession) }),
      myIndex: 1,
      parties,
    };
    return factory(ctx);
  };
  // The instance session id the node derives for the session's first digest (sessions/session-digest.ts).
  const instance = () => bytesToHex(taggedHash('custody/sign/instance/v1', [lastSession, '0']));
  return { store, vault, keyId, open, instance };
}

/** A peer running the pure presigning protocol for the node's session. */
function peer(c: Committee, me: number, signers: number[], sessionId: string): PartyProtocol {
  const k = c.keys.get(me)!;
  return runProtocol(ecdsaPresign, me, [{ sessionId, signers, me, key: k, path: [], ot: c.ots.get(me)! }], () => ({ result: new Uint8Array() }));
}

/** The peer's round-1 batch for the node with one bit of its KOS matrix flipped: a probe of Δ. */
function probe(out: Step, to: number): Uint8Array {
  if (out.kind === 'abort') throw new Error('peer aborted');
  const m = out.out.find((o) => o.to === to && o.round === 1)!;
  const [part] = decodeBatch(m.payload);
  const r1 = decodeBlob<{ commitR: string; ot: { nonce: string; u: Uint8Array; check: Uint8Array } }>(R1_KIND, part!);
  r1.ot.u[0]! ^= 1;
  return encodeBatch([encodeBlob(R1_KIND, r1)]);
}

t.test('a second ECDSA run over a pair that is in use is refused: one probe at a time', async (t) => {
  const c = committee(3, 2, 'ot-retire-busy');
  const node = await honestNode(t, c);
  const first = await node.open([1, 2]);
  const started = await first.start();
  t.equal(started.kind, 'continue', 'the first run starts');
  await t.rejects(node.open([1, 2]), { code: 'ot_busy' }, 'a concurrent run over the same pair is refused');
  // A run that opens while the pair is busy waits for it: it is admitted once the first run ends.
  const waiting = node.open([1, 2]);
  let admitted = false;
  void waiting.then(() => (admitted = true), () => undefined);
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(admitted, 'not while the first run holds the pair');
  first.dispose();
  const third = await waiting;
  t.equal((await third.start()).kind, 'continue', 'once the first run ended, the waiting run is admitted');
  third.dispose();
});

t.test('a retirement survives a concurrent session\'s abort, and a retired pair sends nothing', async (t) => {
  const c = committee(3, 2, 'ot-retire-stale');
  const node = await honestNode(t, c);
  // Two runs at once over different pairs: {1,2} and {1,3}. Each decoded the OT setup at open.
  const a = await node.open([1, 2]);
  const p2 = peer(c, 2, [1, 2], node.instance());
  const b = await node.open([1, 3]);
  const p3 = peer(c, 3, [1, 3], node.instance());
  await a.start();
  await b.start();
  const abortA = await a.deliver(2, 1, probe(await p2.start(), 1), false);
  t.equal(abortA.kind, 'abort', 'the tampered extension of party 2 fails the check');
  t.same(abortA.kind === 'abort' && abortA.culprits, [2], 'party 2 is named');
  t.same((await node.vault.ot(node.keyId))!.retired, [2], 'and retired on disk before the abort is reported');
  const abortB = await b.deliver(3, 1, probe(await p3.start(), 1), false);
  t.equal(abortB.kind, 'abort', 'party 3 probes in the concurrent run');
  a.dispose();
  b.dispose();
  t.same((await node.vault.ot(node.keyId))!.retired, [2, 3], 'the second abort merged its retirement: party 2 stays retired');
  await t.rejects(node.open([1, 2]), { code: 'ot_retired' }, 'no second probe by party 2: its pair is refused at open');
  await t.rejects(node.open([1, 3]), { code: 'ot_retired' }, 'nor by party 3');
});

t.test('a retirement that lands during a run withholds the run\'s next messages', async (t) => {
  const c = committee(3, 2, 'ot-retire-midrun');
  const node = await honestNode(t, c);
  const a = await node.open([1, 2]);
  t.equal((await a.start()).kind, 'continue', 'round 1 went out');
  const p2 = peer(c, 2, [1, 2], node.instance());
  const honest = await p2.start();
  if (honest.kind === 'abort') throw new Error('peer aborted');
  // Another path of this node (a concurrent abort on an older run, say) retires the pair now.
  await node.vault.retireOtPairs(node.keyId, [{ peer: 2, setupId: c.ots.get(1)!.peers['2']!.setupId }]);
  const step = await a.deliver(2, 1, honest.out.find((o) => o.to === 1)!.payload, false);
  // (Without the retirement the same message passes the check: see the last test.)
  t.equal(step.kind, 'abort', 'the run stops');
  t.match(step, { code: 'ot_retired' }, 'because its pair was retired');
  t.notOk('out' in step && (step as { out: unknown[] }).out.length, 'and the round-2 messages (derived from the OT state) never leave');
  a.dispose();
});

t.test('the same honest exchange passes the check when nothing is retired (control for the test above)', async (t) => {
  const c = committee(3, 2, 'ot-retire-midrun');
  const node = await honestNode(t, c);
  const a = await node.open([1, 2]);
  await a.start();
  const honest = await peer(c, 2, [1, 2], node.instance()).start();
  if (honest.kind === 'abort') throw new Error('peer aborted');
  const step = await a.deliver(2, 1, honest.out.find((o) => o.to === 1)!.payload, false);
  t.equal(step.kind, 'continue', 'round 2 goes out');
  t.ok(step.kind === 'continue' && step.out.length > 0);
  a.dispose();
});
