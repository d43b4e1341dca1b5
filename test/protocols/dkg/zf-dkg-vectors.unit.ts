// The ZF frost-secp256k1 and frost-secp256k1-tr DKG vectors through our Feldman aggregation and our
// explicit Taproot tweak: every dealt share verifies against its dealer's commitment, the aggregated
// signing shares, verification shares and group key are ZF's, and for the TR suite (whose DKG output
// is already tweaked) our BIP-341 tweak of the untweaked aggregate gives exactly ZF's output.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { G, Fn, evalCommitment, parsePoint, parseScalar, pointHex, polyEval, scalarHex } from '../../../node/protocols/math/curve.ts';
import { aggregateDealings } from '../../../node/protocols/keys/aggregate.ts';
import { taprootKeyShare } from '../../../node/protocols/frost/taproot.ts';
import { SecretShare } from '../../../node/protocols/keys/key-package.ts';

interface Participant {
  identifier: number;
  signing_key: string;
  coefficient: string;
  vss_commitments: string[];
  signing_shares: Record<string, string>;
  verifying_share: string;
  signing_share: string;
}

function load(name: string) {
  const v = JSON.parse(readFileSync(new URL(`../../../../shared/vectors/frost/${name}`, import.meta.url), 'utf8'));
  const n = Number(v.config.MAX_PARTICIPANTS);
  const t = Number(v.config.MIN_PARTICIPANTS);
  const ps: Participant[] = Array.from({ length: n }, (_, i) => v.inputs[String(i + 1)]);
  return { n, t, ps, verifyingKey: v.inputs.verifying_key as string };
}

function aggregateFor(ps: Participant[], t: number, me: number) {
  const p = ps[me - 1]!;
  const own = scalarHex(polyEval([BigInt('0x' + p.signing_key), BigInt('0x' + p.coefficient)], BigInt(me)));
  const received = ps.filter((q) => q.identifier !== me).map((q) => p.signing_shares[String(q.identifier)]!);
  return aggregateDealings(ps.map((q) => q.vss_commitments), ps.map((q) => q.identifier), t, { me, shares: [own, ...received].map((x) => parseScalar(x, 'share', true)) });
}

t.test('ZF frost-secp256k1 DKG vectors', async (t) => {
  const { t: th, ps, verifyingKey } = load('zf-frost-secp256k1-dkg.json');
  for (const p of ps) {
    t.equal(pointHex(G.multiply(BigInt('0x' + p.signing_key))), p.vss_commitments[0], `participant ${p.identifier}: commitment to its secret`);
    for (const [from, share] of Object.entries(p.signing_shares)) {
      const C = ps[Number(from) - 1]!.vss_commitments.map((c) => parsePoint(c, 'c'));
      t.ok(G.multiply(BigInt('0x' + share)).equals(evalCommitment(C, BigInt(p.identifier))), `share ${from} -> ${p.identifier} verifies against ${from}'s commitment`);
    }
    const agg = aggregateFor(ps, th, p.identifier);
    t.equal(scalarHex(agg.share!), p.signing_share, `participant ${p.identifier}: signing share`);
    t.equal(agg.verificationShares[String(p.identifier)], p.verifying_share, `participant ${p.identifier}: verifying share`);
    t.equal(agg.groupCommitment[0], verifyingKey, 'group key');
  }
});

t.test('ZF frost-secp256k1-tr DKG vectors: our explicit tweak reproduces their pre-tweaked output', async (t) => {
  const { t: th, ps, verifyingKey } = load('zf-frost-secp256k1-tr-dkg.json');
  for (const p of ps) {
    const agg = aggregateFor(ps, th, p.identifier);
    const pkg = {
      keyId: 'zf', epoch: 0, threshold: th, parties: ps.map((q) => q.identifier), groupKey: agg.groupCommitment[0]!, verificationShares: agg.verificationShares,
      groupCommitment: agg.groupCommitment, chainCode: '00'.repeat(32),
    };
    t.not(scalarHex(agg.share!), p.signing_share, 'the untweaked share differs (their output is tweaked)');
    const tweaked = taprootKeyShare({ share: new SecretShare(p.identifier, agg.share!), pkg });
    t.equal(scalarHex(tweaked.share.scalar()), p.signing_share, `participant ${p.identifier}: tweaked signing share`);
    t.equal(tweaked.pkg.verificationShares[String(p.identifier)], p.verifying_share, `participant ${p.identifier}: tweaked verifying share`);
    t.equal(tweaked.pkg.groupKey, verifyingKey, 'tweaked group key');
  }
  void Fn;
});
