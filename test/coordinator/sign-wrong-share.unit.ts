// A signer that sends a wrong FROST signature share, or reports a wrong signature as its result, is named
// and the 2-of-3 vault still signs with the two others (docs/sessions.md "Checked results"). The
// coordinator's vault service runs against a hub that runs the real FROST signing (RFC 9591, Taproot)
// in memory among the session's signers, one of them malicious: the honest signer's aggregation names a
// wrong share (RFC 9591 §5.4), and the coordinator's own check names a wrong result.
import t, { type Test } from 'tap';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import type { SignInput } from '../../coordinator/vaults/vault-service.ts';
import type { PartyReport, SessionOutcome, SessionSpec } from '../../coordinator/sessions/session-hub.ts';
import { frostSign, type FrostSignParams } from '../../node/protocols/frost/frost-sign.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import type { Message } from '../../node/protocols/round/machine.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { signParams, signResult } from '../../core/session/session-contract.ts';
import type { ErrorCode } from '../../core/errors/error-codes.ts';
import { simulate } from '../protocols/simulate.ts';
import { dealerKeys } from '../protocols/frost/keys.ts';
import { activeVault, fill, vaultServiceFixture } from './vault-service-fixture.ts';

const keys = dealerKeys(['5a'.repeat(32), '3c'.repeat(32)], 3);
const pkg = { ...keys.get(1)!.pkg, keyId: 'vault-1', epoch: 0 };
const party = (nodeId: string) => Number(nodeId.slice(1));

type Cheat = 'share' | 'result';

async function setup(t: Test, cheater: string, cheat: Cheat) {
  const sessions: string[][] = [];
  const blamed: string[][] = [];
  let n = 0;
  const run = async (spec: SessionSpec): Promise<SessionOutcome> => {
    const signers = spec.parties.map((p) => p.nodeId);
    sessions.push(signers);
    const p = signParams.decode(spec.params);
    const indices = signers.map(party);
    const sessionId = bytesToHex(sha256(utf8ToBytes(`session ${n++}`)));
    const params = new Map(indices.map((me): [number, FrostSignParams] => [me, { sessionId, suite: 'taproot', message: bytesToHex(p.digests[0]!), signers: indices, me, key: keys.get(me)!, path: p.path }]));
    // The cheater's round-2 message carries a share that is not its own.
    const tamper = cheat === 'share' && indices.includes(party(cheater)) ? new Map([[party(cheater), (m: Message) => (m.round === 2 ? [{ ...m, payload: encodeBlob('frost/r2', { share: '11'.repeat(32) }) }] : [m])]]) : undefined;
    const { results, aborts } = simulate(frostSign, params, tamper ? { tamper } : {});
    // An honest signer's abort is its report to the coordinator, naming the signers it found at fault.
    const honestAbort = [...aborts].find(([i]) => `n${i}` !== cheater);
    if (honestAbort) {
      const [i, abort] = honestAbort;
      const report: PartyReport = { nodeId: `n${i}`, code: abort.code as ErrorCode, message: abort.message, culprits: abort.culprits.map((c) => `n${c}`) };
      blamed.push(report.culprits);
      return { ok: false, code: 'party_failed', message: `n${i}: ${abort.message}`, culprits: report.culprits, reports: [report] };
    }
    return {
      ok: true,
      results: new Map(signers.map((nodeId) => {
        const r = results.get(party(nodeId))!;
        const signature = nodeId === cheater && cheat === 'result' ? fill(64, 7) : hexToBytes(r.signature);
        return [nodeId, signResult.encode({ signatures: [signature], publicKey: hexToBytes(r.publicKey) })];
      })),
    };
  };
  const fixture = await vaultServiceFixture(t, { hub: { run }, vaults: [activeVault(0, { otEpoch: 0, publicKey: pkg.groupKey, chainCode: pkg.chainCode, pkg })] });
  return { keys: fixture.keys, sessions, blamed };
}

const digest = sha256(utf8ToBytes('a Taproot sighash'));
const request: SignInput = {
  vaultId: 'vault-1', path: [], scheme: 'taproot', digests: [digest], intent: fill(10, 1), intentSignature: fill(64, 1), apiKeyId: 'k', template: new Uint8Array(), endUserToken: '',
};

for (const cheat of ['share', 'result'] as const) {
  t.test(`a node that sends a wrong ${cheat === 'share' ? 'signature share' : 'signature as its result'} is named; the two others sign`, async (t) => {
    const { keys: service, sessions, blamed } = await setup(t, 'n2', cheat);
    for (let i = 0; i < 3; i++) {
      const out = await service.sign(request);
      t.same([...out.signers].sort(), ['n1', 'n3'], `signing ${i + 1} is made by n1 and n3`);
      t.ok(schnorr.verify(out.signatures[0]!, digest, outputKey(pkg.groupKey)), 'a BIP-340 signature under the Taproot output key');
    }
    const withCheater = sessions.filter((s) => s.includes('n2')).length;
    t.ok(withCheater >= 1, `n2 was asked (${withCheater} sessions)`);
    if (cheat === 'share') t.ok(blamed.length >= 1 && blamed.every((b) => b.length === 1 && b[0] === 'n2'), 'the honest signer names n2, and only n2');
    // A blame keeps the pair apart (the blamer could be the liar), so a signing may try n2 with each honest
    // node once; a result that does not verify is the cheater's own evidence, so it sits out at once.
    const most = cheat === 'share' ? 9 : 6;
    t.ok(sessions.length <= most, `at most ${most / 3} sessions a signing (${sessions.length} for 3)`);
  });
}
