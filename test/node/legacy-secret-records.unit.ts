// Long-lived secrets stored before they had their own blob sections still load: key shares, OT setups
// and presignatures written with their secrets as hex text (legacy-secret-records-v1.json, written by
// that code) are read through the node's store, sign, and are written back in the new form, whose
// secrets are sections and no longer text. The OT setups are pinned by digest: the test rebuilds the
// old bytes from today's setup of the same seeded committee and checks they are the old code's bytes.
import t, { type Test } from 'tap';
import { readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { decodeOtSetup, encodeOtSetup, type EcdsaOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import { decodePresignature } from '../../node/protocols/ecdsa/presignature.ts';
import { decodeKeyShare, encodeKeyShare } from '../../node/protocols/keys/key-package.ts';
import { exposeScalar } from '../../node/protocols/math/curve.ts';
import { committee, online, presign, sid, sign } from '../protocols/ecdsa/harness.ts';

interface Vectors {
  keyShares: Record<string, string>;
  otSetupSha256: Record<string, string>;
  presignatures: Record<string, string>;
}
const vec = JSON.parse(readFileSync(new URL('./legacy-secret-records-v1.json', import.meta.url), 'utf8')) as Vectors;
const c = committee(2, 2, 'legacy-records');
const keyId = c.keys.get(1)!.pkg.keyId;
const text = (b: Uint8Array) => new TextDecoder('utf-8', { fatal: false }).decode(b);
const shareHex = (id: number) => bytesToHex(c.keys.get(id)!.share.expose());

/** The old writer: the same setup with every secret as hex text (what encodeOtSetup wrote before). */
function legacyOtSetup(o: EcdsaOtSetup): Uint8Array {
  const peers = Object.fromEntries(Object.entries(o.peers).map(([j, p]) => [j, { k0: bytesToHex(p.k0.expose()), k1: bytesToHex(p.k1.expose()), delta: bytesToHex(p.delta.expose()), kd: bytesToHex(p.kd.expose()), zeroSeed: bytesToHex(p.zeroSeed.expose()) }]));
  // The version-1 shape: the committee and one setup id for the whole setup (every pair's id now).
  const parties = [o.me, ...Object.keys(o.peers).map(Number)].sort((a, b) => a - b);
  return encodeBlob('ecdsa-ot-setup', { keyId: o.keyId, epoch: o.epoch, parties, me: o.me, setupId: Object.values(o.peers)[0]!.setupId, peers, retired: o.retired });
}

async function nodeStore(t: Test) {
  const dir = mkdtempSync(join(tmpdir(), 'legacy-records-'));
  const store = await SealedStore.open(dir, new Uint8Array(randomBytes(32)));
  t.teardown(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  return { store, vault: new VaultShareStore(store) };
}

t.test('an old key-share record loads from the store, and is rewritten with the share as a secret section', async (t) => {
  const { store, vault } = await nodeStore(t);
  const old = hexToBytes(vec.keyShares['1']!);
  t.ok(text(old).includes(`"share":"${shareHex(1)}"`), 'the vector is the old form: the share as hex text');
  await store.putSecret(`key/${keyId}/current/share`, old);
  await store.put(`key/${keyId}/current/committee`, new TextEncoder().encode(JSON.stringify({ owner: 'acme', committee: [] })));
  const loaded = await vault.current(keyId);
  t.equal(loaded!.key.share.id, 1);
  t.equal(loaded!.key.share.scalar(), exposeScalar(c.keys.get(1)!.share, 'share'), 'the share is the one stored');
  t.same(loaded!.key.pkg, c.keys.get(1)!.pkg, 'with its package');

  await vault.putPending(keyId, { ...loaded!, key: { ...loaded!.key, pkg: { ...loaded!.key.pkg, epoch: 1 } } });
  const rewritten = (await store.getSecret(`key/${keyId}/pending/share`))!;
  t.notOk(text(rewritten).includes(shareHex(1)), 'the new record holds no hex of the share');
  t.ok(text(rewritten).includes('"share":{"$secret":0}'), 'but a secret section');
  t.equal((await vault.pending(keyId))!.key.share.scalar(), loaded!.key.share.scalar(), 'and loads to the same share');
  t.equal(decodeKeyShare(encodeKeyShare(loaded!.key)).share.scalar(), loaded!.key.share.scalar(), 'the new form round-trips');
});

t.test('old OT-setup records load from the store and sign', async (t) => {
  const { store, vault } = await nodeStore(t);
  const legacy = new Map([1, 2].map((id) => [id, legacyOtSetup(c.ots.get(id)!)]));
  for (const [id, bytes] of legacy) t.equal(bytesToHex(sha256(bytes)), vec.otSetupSha256[String(id)], `party ${id}: the old code wrote exactly these bytes`);
  await store.putSecret(`key/${keyId}/current/ot`, legacy.get(1)!);
  const loaded = (await vault.ot(keyId))!;
  const fields = ['k0', 'k1', 'delta', 'kd', 'zeroSeed'] as const;
  t.ok(fields.every((f) => loaded.peers['2']![f].equals(c.ots.get(1)!.peers['2']![f])), 'every secret of the stored setup is back, as SecretBytes');
  t.equal(loaded.peers['2']!.setupId, c.ots.get(1)!.peers['2']!.setupId, 'the old setup id is the pair\'s');
  const ots = new Map([[1, loaded], [2, decodeOtSetup(legacy.get(2)!)]]);
  const digest = sid('legacy ot digest');
  const sig = sign({ keys: c.keys, ots }, [1, 2], digest, 'legacy ot sign').get(1)!;
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(c.keys.get(1)!.pkg.groupKey), { prehash: false }), 'a signature from the old setups verifies');

  const fresh = encodeOtSetup(loaded);
  t.notOk(text(fresh).includes(bytesToHex(loaded.peers['2']!.delta.expose())), 'rewritten, Δ is no longer text');
  t.ok(decodeOtSetup(fresh).peers['2']!.kd.equals(loaded.peers['2']!.kd), 'and the new form round-trips');
  t.throws(() => decodeOtSetup(encodeBlob('ecdsa-ot-setup', { ...c.ots.get(1)!, setupId: 'ab'.repeat(32), peers: { 2: { k0: 'zz' } } }, { secrets: true })), { code: 'bad_encoding' }, 'a malformed field is refused');
});

t.test('old presignature records decode and sign', async (t) => {
  const stored = new Map([1, 2].map((id) => [id, decodePresignature(hexToBytes(vec.presignatures[String(id)]!))]));
  const fresh = presign(c, [1, 2], 'legacy-presignature').results;
  // Today's presigning context is version 2 (per-pair setup ids), so the id, a hash of the context, moved on;
  // the nonce R, from the same randomness, is the same.
  t.equal(stored.get(1)!.R, fresh.get(1)!.R, 'the stored presignature has the nonce today\'s code makes from the same randomness');
  const digest = sid('legacy presignature digest');
  const on = online(stored, digest);
  t.equal(on.results.size, 2, 'signs');
  const sig = on.results.get(1)!;
  t.ok(secp256k1.verify(hexToBytes(sig.compact), hexToBytes(digest), hexToBytes(sig.publicKey), { prehash: false }), 'and the signature verifies');
});
