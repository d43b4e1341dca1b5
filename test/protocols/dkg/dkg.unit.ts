// DKG: seeded simulations produce consistent Shamir shares of one group key; every malicious party is
// caught and named; runs resume from their serialized bytes.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { dkg, type DkgParams } from '../../../node/protocols/dkg/dkg.ts';
import { G, Fn, lagrangeAtZero, pointHex, scalarHex } from '../../../node/protocols/math/curve.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { decodeKeyShare, encodeKeyShare, checkKeyPackage, SecretShare, type KeyShare } from '../../../node/protocols/keys/key-package.ts';
import { simulate } from '../simulate.ts';
import { inspect } from 'node:util';

const sid = (s: string) => bytesToHex(new TextEncoder().encode(s.padEnd(32, '.')).slice(0, 32));

export function dkgParams(n: number, t: number, keyId = 'vault-1', session = 'dkg-session'): Map<number, DkgParams> {
  const parties = Array.from({ length: n }, (_, i) => i + 1);
  return new Map(parties.map((me) => [me, { sessionId: sid(session), keyId, epoch: 0, threshold: t, parties, me }]));
}

function combine(shares: KeyShare[]): bigint {
  const ids = shares.map((s) => BigInt(s.share.id));
  return shares.reduce((acc, s) => Fn.add(acc, Fn.mul(lagrangeAtZero(ids, BigInt(s.share.id)), s.share.scalar())), 0n);
}

for (const [n, tt] of [[2, 2], [3, 2], [5, 3]] as const) {
  t.test(`${tt}-of-${n}: every party ends with a share of the same group key`, async (t) => {
    const { results, aborts } = simulate(dkg, dkgParams(n, tt));
    t.equal(aborts.size, 0);
    t.equal(results.size, n);
    const shares = [...results.values()];
    const pkg = shares[0]!.pkg;
    for (const s of shares) {
      t.same(s.pkg, pkg, 'identical public packages');
      t.equal(pointHex(G.multiply(s.share.scalar())), pkg.verificationShares[String(s.share.id)], 'share matches its verification share');
    }
    checkKeyPackage(pkg);
    t.match(pkg.chainCode, /^[0-9a-f]{64}$/);
    // Any t shares interpolate to the secret of Y (checked here in the test only).
    const y = combine(shares.slice(0, tt));
    t.equal(pointHex(G.multiply(y)), pkg.groupKey, 'a qualified set reconstructs the group secret');
    t.equal(combine(shares.slice(n - tt)), y, 'every qualified set agrees');
    if (tt > 1) t.not(pointHex(G.multiply(combine(shares.slice(0, tt - 1)))), pkg.groupKey, 'fewer than t shares do not');
  });
}

t.test('runs resume from their serialized bytes at every step', async (t) => {
  const plain = simulate(dkg, dkgParams(3, 2), { seed: 'rt' });
  const resumed = simulate(dkg, dkgParams(3, 2), { seed: 'rt', roundTrip: true });
  t.same([...resumed.results.values()].map((r) => r.pkg), [...plain.results.values()].map((r) => r.pkg));
  t.same([...resumed.results.values()].map((r) => scalarHex(r.share.scalar())), [...plain.results.values()].map((r) => scalarHex(r.share.scalar())));
});

t.test('every message kind round-trips through its encoding', async (t) => {
  const { transcript } = simulate(dkg, dkgParams(3, 2), { seed: 'msgs' });
  const kinds = new Map<string, number>();
  for (const m of transcript) {
    const kind = m.round === 1 ? 'dkg/r1' : m.round === 2 ? (m.to === 'all' ? 'dkg/r2-echo' : 'dkg/r2-share') : 'dkg/r3';
    const v = decodeBlob(kind, m.payload);
    t.same(encodeBlob(kind, v), m.payload);
    kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
  }
  t.same([...kinds.keys()].sort(), ['dkg/r1', 'dkg/r2-echo', 'dkg/r2-share', 'dkg/r3']);
});

t.test('a key share round-trips through sealed-storage encoding and never prints its secret', async (t) => {
  const { results } = simulate(dkg, dkgParams(3, 2), { seed: 'enc' });
  const k = results.get(1)!;
  const back = decodeKeyShare(encodeKeyShare(k));
  t.equal(back.share.scalar(), k.share.scalar());
  t.same(back.pkg, k.pkg);
  const secretHex = scalarHex(k.share.scalar());
  t.notOk(JSON.stringify(k).includes(secretHex), 'JSON shows no secret');
  t.notOk(inspect(k).includes(secretHex), 'inspect shows no secret');
  t.notOk(String(k.share).includes(secretHex));
});

t.test('a stored share whose scalar or package is wrong is refused on every load, also after good loads', async (t) => {
  const { results } = simulate(dkg, dkgParams(3, 2), { seed: 'enc-bad' });
  const k = results.get(2)!;
  const good = encodeKeyShare(k);
  decodeKeyShare(good);
  decodeKeyShare(good);
  const wrongScalar = encodeKeyShare({ share: new SecretShare(2, k.share.scalar() + 1n), pkg: k.pkg });
  const wrongPkg = encodeKeyShare({ share: k.share, pkg: { ...k.pkg, verificationShares: { ...k.pkg.verificationShares, '3': k.pkg.verificationShares['1']! } } });
  for (let i = 0; i < 2; i++) {
    t.throws(() => decodeKeyShare(wrongScalar), { code: 'bad_package' }, `wrong scalar, load ${i + 1}`);
    t.throws(() => decodeKeyShare(wrongPkg), { code: 'bad_package' }, `wrong package, load ${i + 1}`);
  }
  t.equal(decodeKeyShare(good).share.scalar(), k.share.scalar(), 'the good record still loads');
});

function corrupt(kind: string, round: number, to: number | 'all' | undefined, edit: (v: Record<string, unknown>) => void) {
  return (m: Message): Message[] => {
    if (m.round !== round || (to !== undefined && m.to !== to)) return [m];
    const v = decodeBlob<Record<string, unknown>>(kind, m.payload);
    edit(v);
    return [{ ...m, payload: encodeBlob(kind, v) }];
  };
}

t.test('malicious parties are caught and named', async (t) => {
  const cases: [string, number, (m: Message) => Message[], string][] = [
    ['bad VSS share', 2, corrupt('dkg/r2-share', 2, 3, (v) => { v.share = scalarHex(Fn.add(BigInt('0x' + v.share), 1n)); }), 'bad_share'],
    ['bad proof of knowledge', 2, corrupt('dkg/r1', 1, 'all', (v) => { v.pokZ = scalarHex(Fn.add(BigInt('0x' + v.pokZ), 1n)); }), 'bad_proof'],
    ['off-curve commitment', 2, corrupt('dkg/r1', 1, 'all', (v) => { (v.commitment as string[])[1] = '02' + 'f'.repeat(64); }), 'bad_commitment'],
    ['wrong commitment length', 2, corrupt('dkg/r1', 1, 'all', (v) => { (v.commitment as string[]).pop(); }), 'bad_commitment'],
    ['wrong chain-code reveal', 2, corrupt('dkg/r3', 3, 'all', (v) => { v.chainCode = '0'.repeat(64); }), 'bad_reveal'],
    ['wrong confirmation', 2, corrupt('dkg/r3', 3, 'all', (v) => { v.confirm = '1'.repeat(64); }), 'confirmation_mismatch'],
    ['malformed payload', 2, (m) => (m.round === 1 ? [{ ...m, payload: new Uint8Array([1, 123]) }] : [m]), 'bad_message'],
  ];
  for (const [what, culprit, tamper, code] of cases) {
    const { results, aborts } = simulate(dkg, dkgParams(3, 2, 'vault-x', what), { tamper: new Map([[culprit, tamper]]) });
    t.same([...results.keys()].filter((id) => id !== culprit), [], `${what}: no honest party outputs a key`);
    const honest = [...aborts.entries()].filter(([id]) => id !== culprit);
    t.ok(honest.length >= 1, `${what}: honest parties abort`);
    for (const [, err] of honest) {
      t.equal(err.code, code, `${what}: ${code}`);
      t.same(err.culprits, [culprit], `${what}: names party ${culprit}`);
    }
  }
});

t.test('an equivocating broadcast is caught by the echo and the sender is named by every honest party', async (t) => {
  // Party 2 sends one round-1 package to party 1 and another to party 3 (both individually valid).
  const alt = simulate(dkg, dkgParams(3, 2, 'vault-1', 'dkg-session'), { seed: 'alt' }).transcript.find((m) => m.round === 1 && m.from === 2)!;
  const tamper = (m: Message) => (m.round === 1 ? [{ ...m, only: [1] }, { ...alt, only: [3] }] : [m]);
  const { results, aborts } = simulate(dkg, dkgParams(3, 2), { tamper: new Map([[2, tamper]]) });
  t.equal(results.size, 0);
  // Party 2's own run (honest code) sees the others' echoes contradict it; only honest views count.
  const named = [...aborts].filter(([id, e]) => id !== 2 && e.code === 'equivocation').map(([, e]) => e);
  t.ok(named.length >= 1, 'equivocation detected');
  // An echo disagreement names the sender alone only when the reporter contradicts itself; otherwise
  // the reporter and the sender (round/echo.ts): every report includes party 2 and they meet in it.
  for (const e of named) t.ok(e.culprits.includes(2) && e.culprits.length <= 2, `party 2 among the culprits ${e.culprits}`);
  t.same(named.reduce((acc, e) => acc.filter((x) => e.culprits.includes(x)), [1, 2, 3]), [2], 'the reports intersect in party 2');
});

t.test('a message replayed from another session is refused, naming its sender', async (t) => {
  const other = simulate(dkg, dkgParams(3, 2, 'vault-1', 'another-session')).transcript.find((m) => m.round === 1 && m.from === 3)!;
  const { results, aborts } = simulate(dkg, dkgParams(3, 2), { tamper: new Map([[3, (m: Message) => (m.round === 1 ? [other] : [m])]]) });
  t.equal(results.size, 0);
  for (const [id, e] of aborts) if (id !== 3) t.match(e, { code: 'bad_proof', culprits: [3] });
});

t.test('bad parameters are refused before anything is sent', async (t) => {
  const p = dkgParams(3, 2).get(1)!;
  t.throws(() => dkg.start({ ...p, threshold: 1 }, () => new Uint8Array(64)), { code: 'bad_threshold' });
  t.throws(() => dkg.start({ ...p, threshold: 4 }, () => new Uint8Array(64)), { code: 'bad_threshold' });
  t.throws(() => dkg.start({ ...p, parties: [1, 1, 2] }, () => new Uint8Array(64)), { code: 'bad_parties' });
  t.throws(() => dkg.start({ ...p, parties: [0, 1, 2] }, () => new Uint8Array(64)), { code: 'bad_parties' });
  t.throws(() => dkg.start({ ...p, me: 9 }, () => new Uint8Array(64)), { code: 'bad_parties' });
  t.throws(() => dkg.start({ ...p, sessionId: 'xyz' }, () => new Uint8Array(64)), { code: 'bad_session' });
  t.throws(() => dkg.start({ ...p, parties: Array.from({ length: 17 }, (_, i) => i + 1) }, () => new Uint8Array(64)), { code: 'bad_parties' });
});
