// A 2-of-3 vault signs whenever two of its nodes will (docs/sessions.md "Signing subsets"): after a
// failed attempt the coordinator asks another qualified subset, without the node that refused or
// failed with nobody named, and never again seats two nodes one of which blamed the other; one node's
// refusal that no other node shares is routed around, while a refusal two nodes share ends the
// request; and consecutive signings start from different subsets. A node whose result does not verify
// over the digest under the key of the path (a forged signature, another key, a wrong recovery id) is
// named and left out, and the signing completes on another subset (docs/sessions.md "Checked results").
// The coordinator's vault service runs here against a hub that plays the nodes' answers.
import t, { type Test } from 'tap';
import type { SignInput } from '../../coordinator/vaults/vault-service.ts';
import type { PartyReport, SessionOutcome, SessionSpec } from '../../coordinator/sessions/session-hub.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';
import { signParams, signResult } from '../../core/session/session-contract.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import type { SignResult } from '../../core/session/session-results.ts';
import { activeVault, fill, vaultServiceFixture } from './vault-service-fixture.ts';
import { fixtureSigner } from './fixture-signer.ts';

/** What a node answers a signing session: its signature, a wrong one (`forge`), or a report. */
type Answer = 'sign' | { forge: (good: SignResult) => SignResult } | { code: ErrorCode; culprits?: string[] } | 'silent';

async function setup(t: Test, answer: (nodeId: string, signers: string[]) => Answer) {
  const pkg = { ...dealerKeys(['11'.repeat(32), '22'.repeat(32)], 3).get(1)!.pkg, keyId: 'vault-1', epoch: 0 };
  // The dealer polynomial's constant term is the group's secret.
  const signer = fixtureSigner(BigInt('0x' + '11'.repeat(32)), pkg.chainCode);
  const sessions: string[][] = [];
  // The hub ends a session at the first report, as session-hub.ts does; silent parties time out.
  const run = async (spec: SessionSpec): Promise<SessionOutcome> => {
    const signers = spec.parties.map((p) => p.nodeId);
    sessions.push(signers);
    const answers = signers.map((n) => [n, answer(n, signers)] as const);
    for (const [nodeId, a] of answers) {
      if (a === 'sign' || a === 'silent' || 'forge' in a) continue;
      const report: PartyReport = { nodeId, code: a.code, message: `${a.code} from ${nodeId}`, culprits: a.culprits ?? [] };
      return { ok: false, code: 'party_failed', message: `${nodeId}: ${report.message}`, culprits: report.culprits, reports: [report] };
    }
    const silent = answers.filter(([, a]) => a === 'silent').map(([n]) => n);
    if (silent.length) return { ok: false, code: 'timeout', message: `no result from ${silent.join(', ')} in time`, culprits: silent, reports: [] };
    const p = signParams.decode(spec.params);
    const good = signer.sign(p.path, p.scheme, p.digests);
    return { ok: true, results: new Map(answers.map(([n, a]) => [n, signResult.encode(typeof a === 'object' && 'forge' in a ? a.forge(good) : good)])) };
  };
  const { keys } = await vaultServiceFixture(t, { hub: { run }, vaults: [activeVault(0, { otEpoch: 0, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg })] });
  return { keys, sessions };
}

const request = (scheme: 'taproot' | 'ecdsa' = 'taproot'): SignInput => ({
  vaultId: 'vault-1', path: [], scheme, digests: [fill(32, 9)], intent: fill(10, 1), intentSignature: fill(64, 1), apiKeyId: 'k', template: new Uint8Array(), endUserToken: '',
});

for (const scheme of ['taproot', 'ecdsa'] as const) {
  t.test(`${scheme}: one node that refuses everything: every signing still succeeds, on the two others`, async (t) => {
    const { keys, sessions } = await setup(t, (n) => (n === 'n2' ? { code: 'bad_intent_signature' } : 'sign'));
    for (let i = 0; i < 6; i++) {
      const out = await keys.sign(request(scheme));
      t.same([...out.signers].sort(), ['n1', 'n3'], `signing ${i + 1} is made by n1 and n3`);
    }
    t.ok(sessions.length <= 12, `at most two sessions a signing (${sessions.length} for 6)`);
  });

  t.test(`${scheme}: a node missing the share (no culprit named) sits out and another subset signs`, async (t) => {
    const { keys } = await setup(t, (n) => (n === 'n1' ? { code: 'unknown_key' } : 'sign'));
    for (let i = 0; i < 4; i++) t.same([...(await keys.sign(request(scheme))).signers].sort(), ['n2', 'n3']);
  });

  t.test(`${scheme}: a frozen node (silent until the deadline) is left out of the retry`, async (t) => {
    const { keys } = await setup(t, (n) => (n === 'n3' ? 'silent' : 'sign'));
    for (let i = 0; i < 3; i++) t.same([...(await keys.sign(request(scheme))).signers].sort(), ['n1', 'n2']);
  });
}

t.test('a malicious node blaming an honest one: the pair is kept apart, and the honest nodes sign together', async (t) => {
  const { keys, sessions } = await setup(t, (n, signers) => (n === 'n3' ? { code: 'bad_message', culprits: signers.filter((s) => s !== 'n3') } : 'sign'));
  for (let i = 0; i < 3; i++) t.same([...(await keys.sign(request())).signers].sort(), ['n1', 'n2']);
  t.ok(sessions.length <= 9, `at most three sessions a signing (${sessions.length} for 3): no pair is asked twice`);
});

t.test('a refusal two nodes share ends the request with their code; one node alone does not', async (t) => {
  const { keys, sessions } = await setup(t, () => ({ code: 'intent_expired' }));
  await t.rejects(keys.sign(request()), { code: 'intent_expired' });
  t.equal(sessions.length, 2, 'two sessions: the refusal was confirmed by a second node, in another subset');
  t.notOk(sessions[1]!.includes(sessions[0]![0]!), 'the second subset is without the node that refused first');
});

t.test('consecutive signings start from different subsets', async (t) => {
  const { keys, sessions } = await setup(t, () => 'sign');
  for (let i = 0; i < 6; i++) await keys.sign(request());
  t.equal(new Set(sessions.map((s) => [...s].sort().join())).size, 3, 'all three pairs of the 2-of-3 committee sign in turn');
});

/** Wrong answers a node can give in place of its result: each fails the coordinator's check. */
const FORGERIES: Record<string, (scheme: 'taproot' | 'ecdsa') => (good: SignResult) => SignResult> = {
  'a signature with one bit flipped': () => (g) => ({ ...g, signatures: g.signatures.map((s) => s.map((b, i) => (i === 40 ? b ^ 1 : b))) }),
  'a valid signature under another key': (scheme) => () => fixtureSigner(7n).sign([], scheme, [fill(32, 9)]),
  'the right signature naming another key': () => (g) => ({ ...g, publicKey: g.publicKey.map((b, i) => (i === 0 ? b : b ^ 0xff)) }),
};

for (const scheme of ['taproot', 'ecdsa'] as const) {
  for (const [what, forge] of Object.entries(FORGERIES)) {
    t.test(`${scheme}: a node returning ${what} is named, and the two others sign`, async (t) => {
      const { keys, sessions } = await setup(t, (n) => (n === 'n2' ? { forge: forge(scheme) } : 'sign'));
      for (let i = 0; i < 4; i++) {
        const out = await keys.sign(request(scheme));
        t.same([...out.signers].sort(), ['n1', 'n3'], `signing ${i + 1} is made by n1 and n3`);
        t.equal(out.signatures.length, 1);
      }
      t.ok(sessions.length <= 8, `at most two sessions a signing (${sessions.length} for 4)`);
    });
  }
}

t.test('ecdsa: a recovery id that does not recover the key is named', async (t) => {
  const { keys } = await setup(t, (n) => (n === 'n1' ? { forge: (g) => ({ ...g, recoveryIds: g.recoveryIds!.map((r) => r ^ 1) }) } : 'sign'));
  t.same([...(await keys.sign(request('ecdsa'))).signers].sort(), ['n2', 'n3']);
});

t.test('when every subset holds a node that forges, the request fails naming them', async (t) => {
  const { keys } = await setup(t, (n) => (n === 'n3' ? 'sign' : { forge: (g) => ({ ...g, signatures: [fill(64, 7)] }) }));
  const err = (await keys.sign(request()).then(() => undefined, (e: unknown) => e)) as CustodyError;
  t.ok(err instanceof CustodyError, 'no signature is returned');
  t.equal(err.code, 'failed');
  t.match(err.message, /do not verify/);
  t.ok(err.culprits.length >= 1 && err.culprits.every((c) => c === 'n1' || c === 'n2'), `only forgers are named (${err.culprits.join(', ')})`);
});
