// The public key code shared by the API and the nodes (core/keys/): non-hardened BIP-32 public derivation
// against the BIP-32 test vectors, the BIP-341 output key and tweak against the BIP-341 wallet vectors,
// and point parsing against the BIP-32 vectors' invalid public keys.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { HDKey } from '@scure/bip32';
import { createBase58check } from '@scure/base';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { derive, HARDENED } from '../../../core/keys/bip32.ts';
import { internalKey, outputKey, tapTweak } from '../../../core/keys/taproot.ts';
import { parsePoint, pointHex } from '../../../core/keys/point.ts';

const vectorsDir = new URL('../../../../shared/vectors/', import.meta.url);
const readVec = (p: string) => JSON.parse(readFileSync(new URL(p, vectorsDir), 'utf8'));

const parsePath = (p: string) => (p === 'm' ? [] : p.slice(2).split('/').map((s) => (s.endsWith("'") ? Number(s.slice(0, -1)) + HARDENED : Number(s))));

t.test('BIP-32 vectors: every non-hardened run of a chain, from the xpub before it', async (t) => {
  const v = readVec('bip/bip32-test-vectors.json');
  let checked = 0;
  for (const vector of v.valid) {
    const chains: { path: string; xpub: string }[] = vector.chains;
    for (let j = 0; j < chains.length; j++) {
      const parent = HDKey.fromExtendedKey(chains[j]!.xpub);
      const base = parsePath(chains[j]!.path);
      for (let i = j + 1; i < chains.length; i++) {
        const rest = parsePath(chains[i]!.path).slice(base.length);
        if (rest.some((n) => n >= HARDENED)) break;
        const child = HDKey.fromExtendedKey(chains[i]!.xpub);
        const d = derive(bytesToHex(parent.publicKey!), bytesToHex(parent.chainCode!), rest);
        t.equal(pointHex(d.publicKey), bytesToHex(child.publicKey!), `vector ${vector.vector}: ${chains[j]!.path} -> ${chains[i]!.path} key`);
        t.equal(d.chainCode, bytesToHex(child.chainCode!), `vector ${vector.vector}: ${chains[j]!.path} -> ${chains[i]!.path} chain code`);
        checked++;
      }
    }
  }
  t.ok(checked >= 4, `${checked} derivations checked`);
  const root = HDKey.fromExtendedKey(v.valid[0].chains[0].xpub);
  t.throws(() => derive(bytesToHex(root.publicKey!), bytesToHex(root.chainCode!), [HARDENED]), { code: 'bad_path' }, 'a hardened index is refused');
  t.throws(() => derive(bytesToHex(root.publicKey!), bytesToHex(root.chainCode!), [-1]), { code: 'bad_path' });
  t.throws(() => derive(bytesToHex(root.publicKey!), bytesToHex(root.chainCode!), [1.5]), { code: 'bad_path' });
});

t.test('BIP-32 vectors: the invalid public keys are refused', async (t) => {
  const v = readVec('bip/bip32-test-vectors.json');
  const b58 = createBase58check(sha256);
  const bad = (v.invalid as { key: string; reason: string }[]).filter((k) => /^invalid pubkey/.test(k.reason));
  t.equal(bad.length, 3);
  for (const k of bad) {
    const key = bytesToHex(b58.decode(k.key).subarray(45, 78));
    t.throws(() => parsePoint(key, 'key'), { code: 'bad_point' }, k.reason);
  }
  t.throws(() => parsePoint('02' + '00'.repeat(32), 'key'), { code: 'bad_point' });
  t.throws(() => parsePoint(42, 'key'), { code: 'bad_point' });
});

t.test('BIP-341 vectors: tweak and key-path output key', async (t) => {
  const v = readVec('bip/bip341-wallet-test-vectors.json');
  for (const c of v.scriptPubKey) {
    const root = c.intermediary.merkleRoot ? hexToBytes(c.intermediary.merkleRoot) : undefined;
    const what = `internal key ${c.given.internalPubkey.slice(0, 8)}`;
    t.equal(tapTweak(hexToBytes(c.given.internalPubkey), root).toString(16).padStart(64, '0'), c.intermediary.tweak, `${what}: tweak`);
    t.equal(bytesToHex(outputKey('02' + c.given.internalPubkey, root)), c.intermediary.tweakedPubkey, `${what}: output key`);
    t.equal('5120' + bytesToHex(outputKey('03' + c.given.internalPubkey, root)), c.expected.scriptPubKey, `${what}: an odd-y key has the same output key`);
    t.equal(bytesToHex(internalKey('03' + c.given.internalPubkey)), c.given.internalPubkey);
  }
  t.throws(() => tapTweak(new Uint8Array(32), new Uint8Array(31)), { code: 'bad_merkle_root' });
});
