// The SDK's policy helpers make what the nodes verify: an intent approval the evaluator counts, a policy
// change approval the policy log accepts, a chain link that verifies under the API key.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { encodeIntent } from '../../core/intents/intent.ts';
import { evaluatePolicy } from '../../core/policy/policy-evaluator.ts';
import { applyPolicyChange, policyInForce } from '../../core/policy/policy-log.ts';
import { decodeChainLink, verifyChainLinkSignature } from '../../core/policy/intent-chain.ts';
import { approveIntent, approvePolicyChange, chainIntent, policyChangeBody } from '../../api/sdk/policy.ts';
import { alice, bob, evm, intentHash, NOW, policy, seed, VAULT } from '../core/policy/policy-fixtures.ts';

t.test('intent approvals from the SDK satisfy a quorum', async (t) => {
  const p = policy({ quorums: [{ k: 2, approvers: ['alice', 'bob'], when: { rule: 'any' } }] });
  const i = evm();
  const bytes = encodeIntent(i);
  const approvals = [alice, bob].map((a) => approveIntent({ vaultId: VAULT, policyVersion: 1, intent: bytes, approverId: a.id, secretKey: a.secret }));
  t.equal(evaluatePolicy({ policy: p, intent: i, intentHash: intentHash(i), approvals, priorSpends: [], now: NOW }).allow, true);
});

t.test('a policy change approved with the SDK is accepted under the change quorum', async (t) => {
  const v1 = policy({ quorums: [{ k: 2, approvers: ['alice', 'bob'], when: { rule: 'policy_change' } }] });
  const rec = applyPolicyChange(undefined, { policy: v1, approvals: [] }, NOW, NOW);
  const next = { ...JSON.parse(JSON.stringify(v1)), version: 2, recipient_denylist: [`0x${'dd'.repeat(20)}`] };
  const approvals = [alice, bob].map((a) => approvePolicyChange({ fromVersion: 1, next, approverId: a.id, secretKey: a.secret }));
  const after = applyPolicyChange(rec, policyChangeBody(next, approvals), NOW, NOW);
  t.equal(policyInForce(after, NOW)?.doc.version, 2, 'a tightening, in force at once');
});

t.test('a chain link from the SDK verifies under the API key', async (t) => {
  const key = seed('sdk api key');
  const { bytes } = chainIntent({ vaultId: VAULT, intent: encodeIntent(evm()), apiSecretKey: key });
  t.ok(verifyChainLinkSignature(decodeChainLink(bytes), ed25519.getPublicKey(key)));
});
