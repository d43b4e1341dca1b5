// Reshare: chains of hops that change members, size and threshold keep the group key, chain code and
// every derived address; each hop's shares sign, old-epoch and new-epoch shares never combine; cheating
// dealers are named.
import t from 'tap';
import { schnorr } from '@noble/curves/secp256k1.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { reshare, type ReshareParams, type ReshareResult } from '../../../node/protocols/reshare/reshare.ts';
import type { ReshareMember } from '../../../core/session/reshare-member.ts';
import { frostSign, type FrostSignParams } from '../../../node/protocols/frost/frost-sign.ts';
import { outputKey } from '../../../node/protocols/frost/taproot.ts';
import { derive } from '../../../node/protocols/derive/bip32.ts';
import { Fn, G, exposeScalar, lagrangeAtZero, pointHex, scalarHex } from '../../../node/protocols/math/curve.ts';
import type { Message } from '../../../node/protocols/round/machine.ts';
import { decodeBlob, encodeBlob } from '../../../core/codec/blob.ts';
import { simulate } from '../simulate.ts';
import { keyShareParam } from '../../../node/protocols/keys/key-package.ts';
import { dkgKeys, type StoredKey } from '../frost/keys.ts';

const sid = (s: string) => bytesToHex(sha256(new TextEncoder().encode(s)));

/** A committee: node name -> stored key (the key's id is the node's id in that committee). */
type Committee = Map<string, StoredKey>;

function hopParams(old: Committee, dealersNodes: string[], newNodes: string[], newThreshold: number, session: string): { params: Map<number, ReshareParams>; partyOf: Map<string, number> } {
  const union = [...new Set([...dealersNodes, ...newNodes])];
  const partyOf = new Map(union.map((n, i) => [n, i + 1]));
  const oldPkg = [...old.values()][0]!.pkg;
  const members: ReshareMember[] = union.map((n) => {
    const m: ReshareMember = { party: partyOf.get(n)! };
    if (dealersNodes.includes(n)) m.oldId = old.get(n)!.id;
    const j = newNodes.indexOf(n);
    if (j >= 0) m.newId = j + 1;
    return m;
  });
  const params = new Map<number, ReshareParams>(union.map((n) => {
    const k = old.get(n);
    const p: ReshareParams = { sessionId: sid(session), members, me: partyOf.get(n)!, oldPkg, newThreshold, newEpoch: oldPkg.epoch + 1 };
    if (dealersNodes.includes(n)) p.oldShare = { id: k!.id, share: k!.share };
    return [partyOf.get(n)!, p];
  }));
  return { params, partyOf };
}

function hop(old: Committee, dealersNodes: string[], newNodes: string[], newThreshold: number, session: string): Committee {
  const { params, partyOf } = hopParams(old, dealersNodes, newNodes, newThreshold, session);
  const { results, aborts } = simulate(reshare, params, { seed: session });
  if (aborts.size) throw new Error(`reshare aborted: ${[...aborts.values()].map((a) => a.message).join('; ')}`);
  const next: Committee = new Map();
  for (const n of newNodes) {
    const r = results.get(partyOf.get(n)!) as Extract<ReshareResult, { kind: 'receiver' }>;
    next.set(n, keyShareParam(r.key));
  }
  return next;
}

function signWith(c: Committee, nodes: string[], digest: string, path: number[] = [], session = 'sig') {
  const signers = nodes.map((n) => c.get(n)!.id);
  const params = new Map<number, FrostSignParams>(nodes.map((n) => {
    const k = c.get(n)!;
    return [k.id, { sessionId: sid(session), suite: 'taproot', message: digest, signers, me: k.id, key: k, path }];
  }));
  return simulate(frostSign, params, { seed: session });
}

const committeeOf = (keys: Map<number, StoredKey>, names: string[]): Committee => new Map(names.map((n, i) => [n, keys.get(i + 1)!]));

t.test('three-hop chain: 2-of-3 -> 2-of-2 with a new member -> 3-of-5 -> 2-of-3; key, chain code and addresses stay', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'chain'), ['A', 'B', 'C']);
  const pkg0 = c0.get('A')!.pkg;
  const path = [0, 3];
  const addr0 = bytesToHex(outputKey(pointHex(derive(pkg0.groupKey, pkg0.chainCode, path).publicKey)));
  const c1 = hop(c0, ['A', 'C'], ['A', 'S'], 2, 'hop1');
  const c2 = hop(c1, ['A', 'S'], ['A', 'S', 'D', 'E', 'F'], 3, 'hop2');
  const c3 = hop(c2, ['S', 'E', 'F'], ['B', 'E', 'S'], 2, 'hop3');
  for (const [i, c] of [c1, c2, c3].entries()) {
    const pkg = [...c.values()][0]!.pkg;
    t.equal(pkg.groupKey, pkg0.groupKey, `hop ${i + 1}: same group key`);
    t.equal(pkg.chainCode, pkg0.chainCode, `hop ${i + 1}: same chain code`);
    t.equal(pkg.epoch, i + 1, `hop ${i + 1}: epoch ${i + 1}`);
    t.equal(bytesToHex(outputKey(pointHex(derive(pkg.groupKey, pkg.chainCode, path).publicKey))), addr0, `hop ${i + 1}: same derived Taproot key`);
    for (const k of c.values()) t.same(k.pkg, pkg, `hop ${i + 1}: every receiver holds the same package`);
  }
  t.equal([...c2.values()][0]!.pkg.threshold, 3);
  const digest = bytesToHex(sha256(new TextEncoder().encode('after three hops')));
  for (const [c, signers] of [[c1, ['A', 'S']], [c2, ['D', 'E', 'F']], [c3, ['B', 'S']]] as const) {
    const { results } = signWith(c, [...signers], digest, path, 'sig-' + signers.join(''));
    t.ok(schnorr.verify(hexToBytes(results.values().next().value!.signature), hexToBytes(digest), hexToBytes(addr0)), `{${signers}} signs for the same address`);
  }
});

t.test('old-epoch and new-epoch shares never combine', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'mix'), ['A', 'B', 'C']);
  const c1 = hop(c0, ['A', 'B'], ['A', 'B', 'C'], 2, 'refresh');
  const y = G.multiply(1n);
  void y;
  const gk = c0.get('A')!.pkg.groupKey;
  // Refresh: same members, new shares, same key.
  t.equal(c1.get('A')!.pkg.groupKey, gk);
  t.notOk(c1.get('A')!.share.equals(c0.get('A')!.share), 'refresh changed the share');
  // Interpolating an old share with a new share does not give the group secret.
  const old = exposeScalar(c0.get('A')!.share, 'old');
  const neu = exposeScalar(c1.get('B')!.share, 'new');
  const ids = [1n, 2n];
  const mixed = Fn.add(Fn.mul(lagrangeAtZero(ids, 1n), old), Fn.mul(lagrangeAtZero(ids, 2n), neu));
  t.not(pointHex(G.multiply(mixed)), gk, 'old A + new B do not reconstruct');
  // And a signing session mixing epochs releases no signature.
  const digest = bytesToHex(sha256(new TextEncoder().encode('mixed epochs')));
  const mixedCommittee: Committee = new Map([['A', c0.get('A')!], ['B', { ...c1.get('B')!, pkg: c0.get('A')!.pkg }]]);
  const { results, aborts } = signWith(mixedCommittee, ['A', 'B'], digest, [], 'mixed');
  t.equal(results.size, 0, 'no signature');
  t.ok([...aborts.values()].some((a) => a.code === 'bad_signature_share'), 'the mismatched share is caught');
  // Same for old B with new package.
  const mixed2: Committee = new Map([['A', c1.get('A')!], ['B', { ...c0.get('B')!, pkg: c1.get('A')!.pkg }]]);
  t.equal(signWith(mixed2, ['A', 'B'], digest, [], 'mixed2').results.size, 0);
});

function tamperDealer(kind: string, edit: (v: Record<string, unknown>) => void, only?: (m: Message) => boolean) {
  return (m: Message): Message[] => {
    if (m.round !== 1 || (only && !only(m)) || (kind === 'reshare/r1' ? m.to !== 'all' : m.to === 'all')) return [m];
    const v = decodeBlob<Record<string, unknown>>(kind, m.payload);
    edit(v);
    return [{ ...m, payload: encodeBlob(kind, v) }];
  };
}

t.test('cheating dealers are named', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'cheat-reshare'), ['A', 'B', 'C']);
  const cases: [string, (m: Message) => Message[], string][] = [
    ['wrong commitment (not its weighted share)', tamperDealer('reshare/r1', (v) => { (v.commitment as string[])[0] = pointHex(G.multiply(5n)); }), 'bad_commitment'],
    ['off-curve commitment', tamperDealer('reshare/r1', (v) => { (v.commitment as string[])[1] = '03' + 'f'.repeat(64); }), 'bad_commitment'],
    ['bad share', tamperDealer('reshare/r1-share', (v) => { v.share = scalarHex(Fn.add(BigInt('0x' + v.share), 1n)); }), 'bad_share'],
  ];
  for (const [what, tamper, code] of cases) {
    const { params, partyOf } = hopParams(c0, ['A', 'B'], ['A', 'B', 'D'], 2, what);
    const culprit = partyOf.get('B')!;
    const { results, aborts } = simulate(reshare, params, { tamper: new Map([[culprit, tamper]]) });
    const honest = [...partyOf.values()].filter((p) => p !== culprit);
    t.same([...results.keys()].filter((p) => p !== culprit), [], `${what}: no honest result`);
    const blamed = honest.map((p) => aborts.get(p)).filter(Boolean);
    t.ok(blamed.length >= 1, `${what}: honest parties abort`);
    for (const a of blamed) t.match(a, { code, culprits: [culprit] }, `${what}: names the dealer`);
  }
});

t.test('an equivocating dealer is named by the echo', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'equiv-reshare'), ['A', 'B', 'C']);
  const { params, partyOf } = hopParams(c0, ['A', 'B'], ['A', 'C', 'D'], 2, 'equiv');
  const other = hopParams(c0, ['A', 'B'], ['A', 'C', 'D'], 2, 'equiv');
  const alt = simulate(reshare, other.params, { seed: 'alt' }).transcript.find((m) => m.round === 1 && m.from === partyOf.get('B') && m.to === 'all')!;
  const b = partyOf.get('B')!;
  const tamper = (m: Message) => (m.round === 1 && m.to === 'all' ? [{ ...m, only: [partyOf.get('C')!] }, { ...alt, only: [partyOf.get('A')!, partyOf.get('D')!] }] : [m]);
  const { results, aborts } = simulate(reshare, params, { tamper: new Map([[b, tamper]]) });
  t.equal([...results.keys()].filter((p) => p !== b).length, 0, 'nobody completes');
  const named = [...aborts].filter(([p, a]) => p !== b && (a.code === 'equivocation' || a.code === 'bad_share')).map(([, a]) => a);
  t.ok(named.length >= 1);
  // An echo disagreement names the reporter with the dealer, unless it proves one of them alone (round/echo.ts).
  for (const a of named) t.ok(a.culprits.includes(b) && a.culprits.length <= 2, `the dealer among the culprits ${a.culprits}`);
  t.same(named.reduce((acc, a) => acc.filter((x) => a.culprits.includes(x)), [b]), [b], 'the reports meet in the dealer');
});

t.test('every reshare message round-trips through its encoding', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'codec-reshare'), ['A', 'B', 'C']);
  const { params } = hopParams(c0, ['A', 'B'], ['A', 'B', 'D'], 2, 'codec');
  const { transcript } = simulate(reshare, params, { seed: 'codec' });
  const kinds = new Set<string>();
  for (const m of transcript) {
    const kind = m.round === 1 ? (m.to === 'all' ? 'reshare/r1' : 'reshare/r1-share') : 'reshare/r2';
    t.same(encodeBlob(kind, decodeBlob(kind, m.payload)), m.payload);
    kinds.add(kind);
  }
  t.same([...kinds].sort(), ['reshare/r1', 'reshare/r1-share', 'reshare/r2']);
});

t.test('resumes from serialized state; bad parameters are refused', async (t) => {
  const c0 = committeeOf(dkgKeys(3, 2, 'rt-reshare'), ['A', 'B', 'C']);
  const { params } = hopParams(c0, ['A', 'B', 'C'], ['A', 'B', 'C', 'D'], 3, 'rt');
  const rt = simulate(reshare, params, { roundTrip: true, seed: 'rt' });
  t.equal(rt.aborts.size, 0);
  t.equal(rt.results.size, 4);
  const p = params.get(1)!;
  const rng = () => new Uint8Array(64);
  t.throws(() => reshare.start({ ...p, newThreshold: 1 }, rng), { code: 'bad_threshold' });
  t.throws(() => reshare.start({ ...p, newEpoch: 0 }, rng), { code: 'bad_epoch' });
  t.throws(() => reshare.start({ ...p, members: p.members.map((m) => (m.oldId ? { party: m.party, newId: m.newId } : m)) as ReshareMember[] }, rng), { code: 'not_enough_dealers' });
  t.throws(() => reshare.start({ ...p, oldShare: { id: 1, share: c0.get('B')!.share } }, rng), { code: 'bad_key' });
});
