// Members' passkeys as approvers (docs/policies.md "Members' passkeys"): a member approver's approval is
// a WebAuthn assertion over the intent approval message by the passkey its member credential (a JWT
// under the organization's end-user auth keys) names. Verified here as every node verifies it; each
// forgery below is refused: another intent, another member, another signer of the credential, an
// Ed25519 signature in place of a passkey (and the reverse), and members where only keys may approve.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, exportJWK, generateKeyPair, type JWK } from 'jose';
import { MEMBER_CREDENTIAL_TYP, type CredentialConfig } from '../../../core/auth/member-credential.ts';
import { verifyPasskeyApprovals } from '../../../core/policy/passkey-approval.ts';
import { intentApprovalMessage, passkeyApprovalChallenge, type Approval } from '../../../core/policy/policy-approval.ts';
import { evaluatePolicy } from '../../../core/policy/policy-evaluator.ts';
import { parsePolicyDocument } from '../../../core/policy/policy-document.ts';
import { softwarePasskey } from '../../support/software-passkey.ts';
import { alice, approve, evm, intentHash, NATIVE, NOW, policy, VAULT } from './policy-fixtures.ts';

const RP = 'bank.example';
const ORIGIN = 'https://app.bank.example';

t.test('a member approves with a passkey; every forgery is refused', async (t) => {
  const idp = await generateKeyPair('ES256');
  const config: CredentialConfig = { jwks: { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'id-1', alg: 'ES256' } as JWK] }, audience: 'bff-client' };
  const other = await generateKeyPair('ES256');
  const pk = softwarePasskey({ rpId: RP, origin: ORIGIN });
  const credential = (sub: string, key = idp.privateKey) => new SignJWT({ sub, aud: 'bff-client', iat: NOW - 60, exp: NOW + 86_400, cnf: { jwk: pk.jwk }, webauthn: { rp_id: RP, origins: [ORIGIN] } })
    .setProtectedHeader({ alg: 'ES256', kid: 'id-1', typ: MEMBER_CREDENTIAL_TYP }).sign(key);

  const doc = policy({
    approvers: [{ id: 'alice', public_key: alice.publicKey }, { id: 'treasurer', member: 'member-7' }],
    quorums: [{ k: 2, approvers: ['alice', 'treasurer'], when: { above: { [NATIVE]: '100' } } }],
  });
  const intent = evm({ amount: 1000n, notAfter: BigInt(NOW + 600) });
  const message = intentApprovalMessage(VAULT, 1, intentHash(intent));
  const byPasskey = async (o: { sub?: string; key?: typeof idp.privateKey; challenge?: Uint8Array } = {}): Promise<Approval> => {
    const a = pk.assert(passkeyApprovalChallenge(o.challenge ?? message));
    return {
      approver_id: 'treasurer', signature: '',
      passkey: { credential: await credential(o.sub ?? 'member-7', o.key), credential_id: bytesToHex(a.credentialId), authenticator_data: bytesToHex(a.authenticatorData), client_data_json: bytesToHex(a.clientDataJson), signature: bytesToHex(a.signature) },
    };
  };
  const decide = async (approvals: Approval[], cfg: CredentialConfig | null = config) => {
    const { verified, problems } = await verifyPasskeyApprovals(doc, message, approvals, cfg ?? undefined, NOW);
    return { decision: evaluatePolicy({ policy: doc, intent, intentHash: intentHash(intent), approvals, priorSpends: [], now: NOW, passkeyVerified: verified }), problems };
  };

  const good = await decide([approve(alice, intent), await byPasskey()]);
  t.equal(good.decision.allow, true, 'a key and a member\'s passkey meet the 2-of-2 quorum');
  t.match((await decide([approve(alice, intent)])).decision, { allow: false, code: 'approval_required' }, 'the key alone does not');

  const forged: [string, Approval, RegExp][] = [
    ['an assertion over another intent\'s approval message', await byPasskey({ challenge: intentApprovalMessage(VAULT, 1, intentHash(evm({ amount: 999n }))) }), /challenge/],
    ['an assertion under another policy version', await byPasskey({ challenge: intentApprovalMessage(VAULT, 2, intentHash(intent)) }), /challenge/],
    ['a credential of another member', await byPasskey({ sub: 'member-8' }), /another member/],
    ['a credential signed by a key the organization did not register', await byPasskey({ key: other.privateKey }), /./],
  ];
  for (const [what, a, why] of forged) {
    const r = await decide([approve(alice, intent), a]);
    t.match(r.decision, { allow: false, code: 'bad_approval' }, what);
    t.match(r.problems.get('treasurer'), why, `${what}: says why`);
  }
  t.match((await decide([approve(alice, intent), await byPasskey()], null)).decision, { allow: false, code: 'bad_approval' }, 'no end-user registration: no credential verifies');
  const keyOnly = { approver_id: 'treasurer', signature: approve(alice, intent).signature };
  t.match((await decide([approve(alice, intent), keyOnly])).decision, { allow: false, code: 'bad_approval' }, 'a signature in place of the member\'s passkey');
  const aliceWithPasskey = { ...(await byPasskey()), approver_id: 'alice' };
  t.match((await decide([aliceWithPasskey])).decision, { allow: false, code: 'bad_approval' }, 'a passkey in place of a key approver\'s signature');
  t.match((await decide([await byPasskey(), await byPasskey()])).decision, { allow: false, code: 'duplicate_approval' }, 'one member twice');
});

t.test('members approve intents only: policy changes and exports need key approvers', async (t) => {
  const base = { format: 1, version: 1, vault_id: VAULT, approvers: [{ id: 'alice', public_key: alice.publicKey }, { id: 'treasurer', member: 'member-7' }] };
  t.throws(() => parsePolicyDocument({ ...base, quorums: [{ k: 1, approvers: ['treasurer'], when: { rule: 'policy_change' } }] }), { code: 'bad_policy', message: /member approver/ });
  t.throws(() => parsePolicyDocument({ ...base, export: { approvers_k: 1, approvers: ['treasurer'], delay_seconds: 0 } }), { code: 'bad_policy', message: /member approver/ });
  t.throws(() => parsePolicyDocument({ ...base, approvers: [{ id: 'x', public_key: alice.publicKey, member: 'm' }] }), { code: 'bad_policy', message: /exactly one/ });
  t.throws(() => parsePolicyDocument({ ...base, approvers: [{ id: 'x', member: 'm' }, { id: 'y', member: 'm' }] }), { code: 'bad_policy', message: /one member is named under two ids/ });
  t.ok(parsePolicyDocument({ ...base, quorums: [{ k: 1, approvers: ['treasurer'], when: { rule: 'any' } }] }), 'a member in an intent quorum');
});
