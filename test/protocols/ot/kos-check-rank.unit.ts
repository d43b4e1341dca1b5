// The KOS check must not leak the receiver's choice bits. Its two lanes send x_l = GHASH_χl(r_0..r_{M-1}),
// 256 bits that are GF(2)-linear in the bits: x = A·r_first + B·r_extra. They are independent of the XI
// bits the caller uses exactly when B (256 × EXTRA, what the extra random rows contribute) has rank 256.
// B is computed here by linearity with the real challenge derivation and the real GHASH: the
// contribution of each unit choice bit. The model is first checked against real receiver messages.
import t from 'tap';
import { ghash } from '@noble/ciphers/_polyval.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { EXTRA, KAPPA, M, XI, bitOf, checkChallenges, kosReceive } from '../../../node/protocols/ot/kos.ts';
import { seededRng } from '../simulate.ts';

/** Rank over GF(2) of a set of bit vectors (as bigints), by insertion into an XOR basis. */
function rank(vectors: bigint[]): number {
  const basis = new Map<number, bigint>();
  for (let v of vectors) {
    while (v !== 0n) {
      const top = v.toString(2).length - 1;
      const b = basis.get(top);
      if (b === undefined) {
        basis.set(top, v);
        break;
      }
      v ^= b;
    }
  }
  return basis.size;
}

/** What row k's choice bit alone adds to a lane's x: GHASH of the M blocks with the field's 1 at row k. */
function unitContributions(chi: Uint8Array): Uint8Array[] {
  const blocks = new Uint8Array(M * 16);
  const out: Uint8Array[] = [];
  for (let k = 0; k < M; k++) {
    blocks[16 * k] = 0x80; // the field's 1 in GHASH's bit order, as kos.ts encodes a set bit
    out.push(ghash(blocks, chi));
    blocks[16 * k] = 0;
  }
  return out;
}

t.test('the extra rows give the check values full rank 256, so x hides the caller\'s bits', async (t) => {
  t.equal(M, XI + EXTRA, 'M = XI + EXTRA');
  for (const label of ['ctx a', 'ctx b', 'ctx c']) {
    const rng = seededRng(`kos rank ${label}`);
    const k0 = Array.from({ length: KAPPA }, () => rng(32));
    const k1 = Array.from({ length: KAPPA }, () => rng(32));
    const { msg, r } = kosReceive(label, k0, k1, rng);
    const chis = checkChallenges(label, msg.nonce, msg.u);
    const lanes = chis.map(unitContributions);
    // The linear model reproduces the x values the receiver actually sent.
    for (let l = 0; l < 2; l++) {
      const x = new Uint8Array(16);
      for (let k = 0; k < M; k++) if (bitOf(r, k)) for (let i = 0; i < 16; i++) x[i]! ^= lanes[l]![k]![i]!;
      t.equal(bytesToHex(x), bytesToHex(msg.check.subarray(32 * l, 32 * l + 16)), `${label}: lane ${l}'s x is the sum of the unit contributions of the set bits`);
    }
    const columns: bigint[] = [];
    for (let k = XI; k < M; k++) columns.push(BigInt('0x' + bytesToHex(lanes[0]![k]!) + bytesToHex(lanes[1]![k]!)));
    const rk = rank(columns);
    t.equal(rk, 256, `${label}: the ${EXTRA} extra rows map onto all 256 bits of (x_0, x_1) (rank ${rk})`);
  }
});
