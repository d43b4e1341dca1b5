// Base OT and KOS OT extension on their own: the receiver gets exactly the key of its choice, the
// extension rows satisfy q_k = t_k ⊕ r_k·Δ, the GF(2^128) check catches a tampered matrix, and the
// multiplication's shares add up to χ·a.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Fn } from '../../../node/protocols/math/curve.ts';
import { BASE_OT_COUNT, baseOtChoose, baseOtKeys, baseOtSender, unpackPoints } from '../../../node/protocols/ot/base-ot.ts';
import { KAPPA, M, bitOf, degenerateChallenges, kosReceive, kosSend, rowOf, transposeColumns } from '../../../node/protocols/ot/kos.ts';
import { ghash } from '@noble/ciphers/_polyval.js';
import { rvoleAlice, rvoleBobFinish, rvoleBobStart } from '../../../node/protocols/ecdsa/rvole.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { seededRng } from '../simulate.ts';

const rng = seededRng('ot tests');
const { a, A } = baseOtSender(rng);
const choices = rng(BASE_OT_COUNT / 8);
const recv = baseOtChoose('ctx', 1, 2, A, choices, rng);
const sent = baseOtKeys('ctx', 1, 2, a, unpackPoints(recv.B, BASE_OT_COUNT, 'B'));

t.test('base OT: the receiver holds the chosen key and not the other', async (t) => {
  let ok = 0;
  let leak = 0;
  for (let i = 0; i < BASE_OT_COUNT; i++) {
    const bit = bitOf(choices, i);
    const [chosen, other] = bit ? [sent.k1[i]!, sent.k0[i]!] : [sent.k0[i]!, sent.k1[i]!];
    if (bytesToHex(recv.keys[i]!) === bytesToHex(chosen)) ok++;
    if (bytesToHex(recv.keys[i]!) === bytesToHex(other)) leak++;
  }
  t.equal(ok, BASE_OT_COUNT, 'every chosen key matches');
  t.equal(leak, 0, 'no other key matches');
  const wrongCtx = baseOtKeys('other ctx', 1, 2, a, unpackPoints(recv.B, BASE_OT_COUNT, 'B'));
  t.not(bytesToHex(wrongCtx.k0[0]!), bytesToHex(sent.k0[0]!), 'keys are bound to the context');
});

t.test('KOS: rows are correlated by Δ, and the check refuses a tampered matrix', async (t) => {
  const delta = choices;
  const kd = sent.k0.map((k, c) => (bitOf(delta, c) ? sent.k1[c]! : k));
  // The base-OT receiver is the extension sender: its chosen keys are recv.keys.
  t.same(kd.map(bytesToHex), recv.keys.map(bytesToHex), 'chosen keys line up');
  const ext = kosReceive('ext ctx', sent.k0, sent.k1, rng);
  const q = kosSend('ext ctx', delta, recv.keys, ext.msg);
  let good = 0;
  for (let k = 0; k < M; k++) {
    const tk = rowOf(ext.t, k);
    const qk = rowOf(q, k);
    if (qk.every((b, i) => b === (tk[i]! ^ (bitOf(ext.r, k) ? delta[i]! : 0)))) good++;
  }
  t.equal(good, M, 'q_k = t_k xor r_k·Δ for every row');
  const flipped = ext.msg.u.slice();
  flipped[50]! ^= 0x10;
  t.throws(() => kosSend('ext ctx', delta, recv.keys, { ...ext.msg, u: flipped }), InputError, 'tampered matrix refused');
  t.throws(() => kosSend('another ctx', delta, recv.keys, ext.msg), InputError, 'message from another context refused');
  // Each lane's x and t (check v4: GCM's hash of the lane), one bit off each.
  for (const at of [0, 16, 32, 48]) {
    const check = ext.msg.check.slice();
    check[at + 7]! ^= 0x01;
    t.throws(() => kosSend('ext ctx', delta, recv.keys, { ...ext.msg, check }), InputError, `check value at byte ${at} altered: refused`);
  }
});

t.test('RVOLE: c + d = χ·a, and a tampered τ is caught', async (t) => {
  const bob = rvoleBobStart('mul ctx', sent.k0, sent.k1, rng);
  const input: [bigint, bigint] = [Fn.create(123456789n), Fn.create(987654321n)];
  const alice = rvoleAlice('mul ctx', choices, recv.keys, bob.msg, input, rng);
  const d = rvoleBobFinish('mul ctx', bob.state, alice.msg);
  t.equal(Fn.add(alice.c[0], d[0]), Fn.mul(bob.chi, input[0]), 'first product');
  t.equal(Fn.add(alice.c[1], d[1]), Fn.mul(bob.chi, input[1]), 'second product');
  const tau = alice.msg.tau;
  const bad = tau.slice();
  bad[32 * 9 + 31]! ^= 1;
  t.throws(() => rvoleBobFinish('mul ctx', bob.state, { ...alice.msg, tau: bad }), InputError, 'inconsistent input refused');
});

t.test('KOS: the 8×8-block transpose equals the bit-by-bit one', async (t) => {
  const r = seededRng('transpose');
  for (let round = 0; round < 3; round++) {
    const cols = Array.from({ length: KAPPA }, () => r(M / 8));
    if (round === 1) cols[9] = new Uint8Array(M / 8); // an all-zero column
    const rows = transposeColumns(cols);
    let same = true;
    for (let c = 0; c < KAPPA; c++) for (let k = 0; k < M; k++) if (bitOf(cols[c]!, k) !== bitOf(rowOf(rows, k), c)) same = false;
    t.ok(same, `random matrix ${round}: bit (c, k) of the columns is bit (k, c) of the rows`);
  }
});

t.test('KOS: a challenge pair that would lower the check\'s rank is refused', async (t) => {
  const r = seededRng('challenges');
  const square = (x: Uint8Array) => ghash(x, x); // one block: x·x
  const pow2 = (x: Uint8Array, i: number) => Array.from({ length: i }).reduce<Uint8Array>((y) => square(y), x);
  const one = new Uint8Array(16);
  one[0] = 0x80;
  for (let i = 0; i < 4; i++) t.notOk(degenerateChallenges(r(16), r(16)), `random pair ${i} is accepted`);
  const a = r(16);
  t.ok(degenerateChallenges(a, a), 'equal challenges');
  t.ok(degenerateChallenges(a, pow2(a, 1)), 'χ_1 = χ_0^2');
  t.ok(degenerateChallenges(a, pow2(a, 77)), 'χ_1 = χ_0^(2^77)');
  t.ok(degenerateChallenges(new Uint8Array(16), a) && degenerateChallenges(a, new Uint8Array(16)), 'zero');
  t.ok(degenerateChallenges(one, a) && degenerateChallenges(a, one), 'one (in GF(2))');
  // The norm a^(2^64 + 1) lies in the subfield GF(2^64).
  const norm = ghash(pow2(a, 64), a);
  t.ok(degenerateChallenges(norm, r(16)) && degenerateChallenges(r(16), norm), 'an element of GF(2^64)');
});
