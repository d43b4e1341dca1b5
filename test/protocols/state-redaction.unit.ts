// Protocol state never prints a secret (STYLE.md habit 3): every run of DKG, FROST, the ECDSA OT
// setup, presigning, the online phase and reshare is watched after every step of every party, and its
// printed forms (JSON.stringify, util.inspect at full depth, a template literal) must not hold any
// secret the test knows: key shares, tweaked shares, presignature scalars, OT keys, Δ and seeds (from
// the results), and every secret the states themselves hold (polynomial coefficients, nonces, r_i,
// sk_i, φ_i, multiplication shares, choice bits, base-OT scalars), read through `expose()` as the step
// happens. Each secret is looked for as hex, as a decimal integer and as a list of its bytes.
import t, { type Test } from 'tap';
import { inspect } from 'node:util';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SecretBytes } from '../../core/codec/secret.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { ProtocolBug } from '../../core/errors/protocol-errors.ts';
import { secretScalar } from '../../node/protocols/math/curve.ts';
import { startRun, type Run } from '../../node/protocols/round/machine.ts';
import { dkg, type DkgParams } from '../../node/protocols/dkg/dkg.ts';
import { frostSign, signingKeyShare, type FrostSignParams } from '../../node/protocols/frost/frost-sign.ts';
import { reshare, type ReshareParams } from '../../node/protocols/reshare/reshare.ts';
import { keyShareParam } from '../../node/protocols/keys/key-package.ts';
import { decodeBlob } from '../../core/codec/blob.ts';
import type { EcdsaOtSetup } from '../../node/protocols/ecdsa/ot-setup.ts';
import type { PresignatureData } from '../../node/protocols/ecdsa/presignature.ts';
import type { ReshareMember } from '../../core/session/reshare-member.ts';
import { seededRng, simulate, type SimOptions } from './simulate.ts';
import { dkgKeys } from './frost/keys.ts';
import { online, otSetup, presign, sid, type Committee } from './ecdsa/harness.ts';
import { nativePrimitives } from '../../node/runtime/native-primitives.ts';

/** Every printed form of every state seen, and every secret the states held when they were seen. */
class Watch {
  /** Printed forms, each with the round its run was in. */
  readonly printed: { round: number; text: string }[] = [];
  /** Secrets by label, each secret until the round given (a commit-reveal value is public once revealed). */
  readonly secrets = new Map<string, { label: string; bytes: Uint8Array; until: number }>();
  /** How many SecretBytes the states held, by protocol (so the check is not vacuous). */
  readonly held = new Map<string, number>();

  /** `revealedIn`: state fields that hold a value revealed in that round (the DKG's chain-code contribution). */
  constructor(readonly name: string, readonly revealedIn: Record<string, number> = {}) {}

  readonly observe: NonNullable<SimOptions['observe']> = (party, run) => this.see(party, run);

  see(party: number, run: Run<unknown>): void {
    for (const text of [JSON.stringify(run), inspect(run, { depth: Infinity, maxArrayLength: Infinity, maxStringLength: Infinity }), `${JSON.stringify(run.state)} ${String(run.state)}`]) {
      this.printed.push({ round: run.round, text: text.replace(/\s+/g, '') });
    }
    this.collect(`${this.name}/${party}`, run.state);
  }

  know(label: string, bytes: Uint8Array, until = Infinity): void {
    const key = bytesToHex(bytes);
    const had = this.secrets.get(key);
    if (!had || had.until > until) this.secrets.set(key, { label, bytes: Uint8Array.from(bytes), until });
  }

  private collect(label: string, v: unknown, seen = new Set<unknown>()): void {
    if (typeof v !== 'object' || v === null || seen.has(v)) return;
    seen.add(v);
    if (v instanceof SecretBytes) {
      if (v.zeroized || v.length === 0) return;
      this.know(label, v.expose(), this.revealedIn[label.slice(label.lastIndexOf('.') + 1)]);
      this.held.set(this.name, (this.held.get(this.name) ?? 0) + 1);
      return;
    }
    if (v instanceof Uint8Array) return;
    for (const [k, x] of Object.entries(v)) this.collect(`${label}.${k}`, x, seen);
  }

  /** Hex, decimal and byte-list forms of every 32-byte piece of every secret, each absent from every print. */
  check(t: Test): void {
    let pieces = 0;
    const leaks: string[] = [];
    const joined = new Map<number, string>();
    const printsBefore = (until: number) => {
      if (!joined.has(until)) joined.set(until, this.printed.filter((p) => p.round < until).map((p) => p.text).join('|'));
      return joined.get(until)!;
    };
    for (const { label, bytes, until } of this.secrets.values()) {
      const prints = printsBefore(until);
      // Long secrets (OT keys: 256 keys of 32 bytes) are looked for by their first, second and last key.
      const offsets = [...new Set([0, 32, bytes.length - 32])].filter((at) => at >= 0 && at < bytes.length);
      for (const at of offsets) {
        const piece = bytes.subarray(at, at + 32);
        if (piece.every((b) => b === 0)) continue;
        pieces++;
        const forms = [bytesToHex(piece), BigInt('0x' + bytesToHex(piece)).toString(), [...piece.subarray(0, 12)].join(','), [...piece.subarray(0, 8)].map((b, i) => `"${i}":${b}`).join(',')];
        if (forms.some((f) => prints.includes(f))) leaks.push(`${label} at ${at}`);
      }
    }
    t.ok(pieces > 0, `${this.name}: secrets to look for (${pieces} pieces)`);
    t.same(leaks, [], `${this.name}: no secret in any printed state (${this.printed.length / 3} states)`);
  }
}

const hex32 = (s: SecretBytes) => s.expose();

t.test('DKG states print no coefficient, dealt share, chain-code secret or key share', async (t) => {
  // The chain-code contribution is committed in round 1 and revealed in round 3: secret until then.
  const w = new Watch('dkg', { ccSecret: 3 });
  const parties = [1, 2, 3];
  const params = new Map<number, DkgParams>(parties.map((me) => [me, { sessionId: sid('redact dkg'), keyId: 'redact', epoch: 0, threshold: 2, parties, me }]));
  const { results } = simulate(dkg, params, { seed: 'redact dkg', observe: w.observe });
  t.equal(results.size, 3);
  for (const [id, k] of results) w.know(`key share ${id}`, hex32(keyShareParam(k).share));
  t.ok((w.held.get('dkg') ?? 0) >= 3 * (2 + 1 + 1), 'the states held the coefficients, own share and chain-code secret as SecretBytes');
  w.check(t);
  // The same through runs restored from their sealed bytes at every step.
  const r = new Watch('dkg restored', { ccSecret: 3 });
  simulate(dkg, params, { seed: 'redact dkg', roundTrip: true, observe: r.observe });
  for (const [id, k] of results) r.know(`key share ${id}`, hex32(keyShareParam(k).share));
  r.check(t);
});

t.test('FROST states print no share, tweaked share or nonce', async (t) => {
  const keys = dkgKeys(3, 2, 'redact-frost');
  const w = new Watch('frost');
  const params = new Map<number, FrostSignParams>([1, 3].map((me) => [me, { sessionId: sid('redact frost'), suite: 'taproot', message: '22'.repeat(32), signers: [1, 3], me, key: keys.get(me)!, path: [0, 7] }]));
  const { results } = simulate(frostSign, params, { seed: 'redact frost', observe: w.observe });
  t.equal(results.size, 2);
  for (const [id, p] of params) {
    w.know(`key share ${id}`, hex32(p.key.share));
    w.know(`tweaked share ${id}`, hex32(secretScalar(signingKeyShare(p).share.scalar())));
  }
  t.ok((w.held.get('frost') ?? 0) >= 2 * 3, 'the states held both nonces and the tweaked share as SecretBytes');
  w.check(t);
});

t.test('ECDSA OT setup, presigning and online states print no OT key, Δ, seed, r, sk, φ, u or v', async (t) => {
  const keys = dkgKeys(3, 2, 'redact-ecdsa');
  const ws = new Watch('ot-setup');
  const setup = otSetup(keys, 'redact ot', { observe: ws.observe, prims: nativePrimitives }); // as the nodes run it
  t.equal(setup.results.size, 3);
  const c: Committee = { keys, ots: setup.results };
  const knowSetup = (w: Watch, o: EcdsaOtSetup) => {
    for (const [j, p] of Object.entries(o.peers)) for (const [f, v] of Object.entries(p)) if (v instanceof SecretBytes) w.know(`ot ${o.me}/${j}.${f}`, v.expose());
  };
  for (const o of setup.results.values()) knowSetup(ws, o);
  t.ok((ws.held.get('ot-setup') ?? 0) > 0, 'the setup states held secrets as SecretBytes');
  ws.check(t);

  const wp = new Watch('presign');
  const pre = presign(c, [1, 2], 'redact presign', [3], { observe: wp.observe });
  t.equal(pre.results.size, 2);
  const wo = new Watch('online');
  for (const [id, p] of pre.results) {
    const d = decodeBlob<PresignatureData>('ecdsa-presignature', p.encode(), { secrets: true });
    for (const w of [wp, wo]) for (const f of ['u', 'v', 'phi'] as const) w.know(`presignature ${id}.${f}`, d[f].expose());
  }
  for (const id of [1, 2]) {
    wp.know(`key share ${id}`, hex32(keys.get(id)!.share));
    knowSetup(wp, setup.results.get(id)!);
  }
  t.ok((wp.held.get('presign') ?? 0) > 0, 'the presigning states held secrets as SecretBytes');
  wp.check(t);

  const on = online(pre.results, sid('redact digest'), { observe: wo.observe });
  t.equal(on.results.size, 2);
  // u_i is broadcast in the online round by design; v_i and φ_i must not appear.
  for (const [key, s] of wo.secrets) if (s.label.endsWith('.u')) wo.secrets.delete(key);
  wo.check(t);
});

t.test('reshare states print no old share, dealt share or new share', async (t) => {
  const keys = dkgKeys(3, 2, 'redact-reshare');
  const oldPkg = keys.get(1)!.pkg;
  const members: ReshareMember[] = [{ party: 1, oldId: 1, newId: 1 }, { party: 2, oldId: 2, newId: 2 }, { party: 3, newId: 3 }];
  const params = new Map<number, ReshareParams>(members.map((m) => [m.party, {
    sessionId: sid('redact reshare'), members, me: m.party, oldPkg, newThreshold: 2, newEpoch: 1, ...(m.oldId ? { oldShare: { id: m.oldId, share: keys.get(m.oldId)!.share } } : {}),
  }]));
  const w = new Watch('reshare');
  const { results } = simulate(reshare, params, { seed: 'redact reshare', observe: w.observe });
  t.equal(results.size, 3);
  for (const [id, r] of results) if (r.kind === 'receiver') w.know(`new share ${id}`, hex32(keyShareParam(r.key).share));
  for (const id of [1, 2]) w.know(`old share ${id}`, hex32(keys.get(id)!.share));
  t.ok((w.held.get('reshare') ?? 0) > 0, 'the states held the dealt shares as SecretBytes');
  w.check(t);
});

t.test('a run holding secrets encodes only for sealed storage', async (t) => {
  const params: DkgParams = { sessionId: sid('redact blob'), keyId: 'redact', epoch: 0, threshold: 2, parties: [1, 2], me: 1 };
  const { run } = startRun(dkg, params, seededRng('redact blob'));
  t.throws(() => encodeBlob('run', run), ProtocolBug, 'not as a wire payload');
  const sealed = encodeBlob('run', run, { secrets: true });
  const back = decodeBlob<typeof run>('run', sealed, { secrets: true });
  t.ok(back.state.coeffs.every((c, i) => c.equals(run.state.coeffs[i]!)), 'the coefficients come back as SecretBytes');
  t.throws(() => decodeBlob('run', sealed), { code: 'bad_encoding' }, 'and are not read back as a payload');
});
