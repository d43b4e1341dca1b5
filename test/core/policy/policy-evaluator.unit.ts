// The policy evaluator (docs/policies.md "Rules"): every rule allows what it should and refuses the rest
// with its reason code; approvals count only when they verify for this intent, vault and policy version,
// from distinct approvers of the quorum's set.
import t, { type Test } from 'tap';
import { hexToBytes } from '@noble/hashes/utils.js';
import { evaluatePolicy, intentEffects, decodeErc20Call, type PolicyDecision, type Spend } from '../../../core/policy/policy-evaluator.ts';
import type { Intent } from '../../../core/intents/intent.ts';
import type { Approval } from '../../../core/policy/policy-approval.ts';
import type { PolicyDocument } from '../../../core/policy/policy-document.ts';
import {
  alice, approve, bob, BOB_ADDR, btc, carol, erc20Data, EVE_ADDR, evm, intentHash, mallory, NATIVE, NOW, policy, safeTx, TOKEN, TOKEN_ASSET,
} from './policy-fixtures.ts';

function run(p: PolicyDocument, i: Intent, approvals: Approval[] = [], priorSpends: Spend[] = []): PolicyDecision {
  return evaluatePolicy({ policy: p, intent: i, intentHash: intentHash(i), approvals, priorSpends, now: NOW });
}

const refused = (t: Test, d: PolicyDecision, code: string, what: string) => {
  t.equal(d.allow, false, `${what}: refused`);
  if (!d.allow) {
    t.equal(d.code, code, `${what}: ${code}`);
    t.ok(d.message.length > 10, `${what}: says why`);
  }
};

t.test('an empty policy allows every kind of intent', async (t) => {
  for (const i of [evm(), evm({ data: hexToBytes('12345678') }), btc(), safeTx()]) t.equal(run(policy(), i).allow, true);
});

t.test('per-transaction caps apply per asset, to the total of the intent', async (t) => {
  const p = policy({ per_transaction_cap: { [NATIVE]: '1000', 'bitcoin:regtest:native': '6000' } });
  t.equal(run(p, evm({ amount: 1000n })).allow, true, 'at the cap');
  refused(t, run(p, evm({ amount: 1001n })), 'cap_exceeded', 'over the cap');
  t.equal(run(p, evm({ amount: 10n ** 20n, asset: { kind: 'erc20', contract: hexToBytes(TOKEN.slice(2)) } })).allow, true, 'another asset is not capped');
  refused(t, run(p, btc({ outputs: [{ address: 'bcrt1qaaaaaaaaaaaaaaaaaaaa', amount: 3000n }, { address: 'bcrt1qbbbbbbbbbbbbbbbbbbbb', amount: 3001n }] })), 'cap_exceeded', 'Bitcoin outputs add up');
});

t.test('the rolling window counts earlier spends of the asset still in the window', async (t) => {
  const p = policy({ rolling_window: { seconds: 3600, caps: { [NATIVE]: '5000' } } });
  const spends: Spend[] = [{ asset: NATIVE, amount: 3000n, at: NOW - 100 }, { asset: NATIVE, amount: 9000n, at: NOW - 3600 }, { asset: TOKEN_ASSET, amount: 9000n, at: NOW }];
  t.equal(run(p, evm({ amount: 2000n }), [], spends).allow, true, 'exactly the window (the one at the edge and the other asset do not count)');
  const d = run(p, evm({ amount: 2001n }), [], spends);
  refused(t, d, 'window_exceeded', 'one over the window');
  if (!d.allow) t.match(d.message, /3000 already spent of 5000 per 3600 s/);
});

t.test('recipient deny and allow lists, EVM addresses in any case', async (t) => {
  refused(t, run(policy({ recipient_denylist: [BOB_ADDR.toUpperCase().replace('0X', '0x')] }), evm()), 'recipient_denied', 'denied');
  refused(t, run(policy({ recipient_allowlist: [EVE_ADDR] }), evm()), 'recipient_not_allowed', 'not on the allow list');
  t.equal(run(policy({ recipient_allowlist: [BOB_ADDR] }), evm()).allow, true);
  refused(t, run(policy({ recipient_allowlist: [EVE_ADDR] }), safeTx()), 'recipient_not_allowed', "a Safe call's target");
  refused(t, run(policy({ recipient_denylist: ['bcrt1qtoaddressxxxxxxxxxxxxxx'] }), btc()), 'recipient_denied', 'a Bitcoin output');
});

t.test('the asset allow list', async (t) => {
  const p = policy({ asset_allowlist: [NATIVE] });
  t.equal(run(p, evm()).allow, true);
  refused(t, run(p, evm({ asset: { kind: 'erc20', contract: hexToBytes(TOKEN.slice(2)) } })), 'asset_not_allowed', 'a token not listed');
  refused(t, run(p, btc()), 'asset_not_allowed', 'bitcoin not listed');
});

t.test('ERC-20 transfer and approve calldata is decoded: caps, windows and lists apply to its amount and recipient', async (t) => {
  const transfer = evm({ to: hexToBytes(TOKEN.slice(2)), amount: 0n, data: erc20Data('a9059cbb', EVE_ADDR, 700n) });
  t.same(intentEffects(transfer).transfers, [{ asset: TOKEN_ASSET, recipient: EVE_ADDR, amount: 700n }]);
  t.same(decodeErc20Call(erc20Data('095ea7b3', EVE_ADDR, 5n)), { selector: '0x095ea7b3', to: EVE_ADDR, amount: 5n });
  t.equal(decodeErc20Call(hexToBytes('a9059cbb' + 'ff'.repeat(64))), undefined, 'a dirty address word is not an address');
  refused(t, run(policy({ per_transaction_cap: { [TOKEN_ASSET]: '699' } }), transfer), 'cap_exceeded', 'cap on the decoded amount');
  refused(t, run(policy({ rolling_window: { seconds: 60, caps: { [TOKEN_ASSET]: '1000' } } }), transfer, [], [{ asset: TOKEN_ASSET, amount: 301n, at: NOW }]), 'window_exceeded', 'window on the decoded amount');
  refused(t, run(policy({ recipient_denylist: [EVE_ADDR] }), transfer), 'recipient_denied', 'the decoded recipient');
  const approval = evm({ to: hexToBytes(TOKEN.slice(2)), amount: 0n, data: erc20Data('095ea7b3', EVE_ADDR, 10n ** 30n) });
  refused(t, run(policy({ per_transaction_cap: { [TOKEN_ASSET]: '1000' } }), approval), 'cap_exceeded', 'an approve counts as what it allows to move');
});

t.test('contract-call rules: the contract and selector must be allowed', async (t) => {
  const rules = { contract_calls: [{ chain: 'eip155:1', contract: TOKEN.toUpperCase().replace('0X', '0x'), selectors: ['0xa9059cbb'] }] };
  const transfer = evm({ to: hexToBytes(TOKEN.slice(2)), amount: 0n, data: erc20Data('a9059cbb', EVE_ADDR, 1n) });
  t.equal(run(policy(rules), transfer).allow, true, 'allowed contract and selector');
  refused(t, run(policy(rules), evm({ to: hexToBytes(TOKEN.slice(2)), amount: 0n, data: erc20Data('095ea7b3', EVE_ADDR, 1n) })), 'contract_call_denied', 'another selector');
  refused(t, run(policy(rules), evm({ data: hexToBytes('a9059cbb') })), 'contract_call_denied', 'another contract');
  refused(t, run(policy(rules), evm({ to: hexToBytes(TOKEN.slice(2)), data: hexToBytes('a905') })), 'contract_call_denied', 'data without a selector');
  refused(t, run(policy(rules), safeTx({ chainId: 5n })), 'contract_call_denied', 'same contract on another chain');
  refused(t, run(policy(rules), safeTx()), 'contract_call_denied', 'a Safe call with a selector not listed');
  t.equal(run(policy(rules), evm()).allow, true, 'a plain transfer is no call');
});

t.test('default deny: an asset needs a rule naming it, a call needs a contract rule', async (t) => {
  const p = policy({ default_deny: true, per_transaction_cap: { [NATIVE]: '10000' } });
  t.equal(run(p, evm()).allow, true, 'native named by a cap');
  refused(t, run(p, btc()), 'default_deny', 'bitcoin named by nothing');
  refused(t, run(p, evm({ data: hexToBytes('12345678') })), 'default_deny', 'a call with no contract rule');
  t.equal(run(policy({ default_deny: true, rolling_window: { seconds: 60, caps: { 'bitcoin:regtest:native': '9000' } } }), btc()).allow, true, 'named by a window');
  t.equal(run(policy({ default_deny: true, asset_allowlist: ['bitcoin:regtest:native'] }), btc()).allow, true, 'named by the allow list');
});

t.test('a quorum above an amount: k distinct approvals from its set', async (t) => {
  const p = policy({ quorums: [{ k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '1000' } } }] });
  const small = evm({ amount: 1000n });
  t.equal(run(p, small).allow, true, 'at the threshold: no approval needed');
  const big = evm({ amount: 1001n });
  const d = run(p, big, [approve(alice, big)]);
  refused(t, d, 'approval_required', 'one of two');
  if (!d.allow) t.same(d.quorums, [{ index: 0, k: 2, approvers: ['alice', 'bob', 'carol'], approvedBy: ['alice'] }], 'says who approved and what is missing');
  const ok = run(p, big, [approve(alice, big), approve(carol, big)]);
  t.equal(ok.allow, true, 'two of three');
});

t.test('approvals that do not count are refused with a reason', async (t) => {
  const p = policy({ approvers: [alice, bob, carol, mallory].map((a) => ({ id: a.id, public_key: a.publicKey })), quorums: [{ k: 2, approvers: ['alice', 'bob'], when: { rule: 'any' } }] });
  const i = evm();
  const other = evm();
  refused(t, run(p, i, [approve(alice, i), approve(bob, other)]), 'bad_approval', 'an approval of another intent');
  refused(t, run(p, i, [approve(alice, i), approve(bob, i, 2)]), 'bad_approval', 'an approval under another policy version');
  refused(t, run(p, i, [approve(alice, i), approve(bob, i, 1, 'vault_other')]), 'bad_approval', 'an approval for another vault');
  refused(t, run(p, i, [approve(alice, i), { approver_id: 'bob', signature: approve(alice, i).signature }]), 'bad_approval', 'forged: a signature of someone else under bob\'s id');
  refused(t, run(p, i, [approve(alice, i), approve(alice, i)]), 'duplicate_approval', 'one approver twice');
  refused(t, run(p, i, [approve(alice, i), { ...approve(bob, i), approver_id: 'dave' }]), 'unknown_approver', 'an id not in the policy');
  refused(t, run(p, i, [approve(alice, i), approve(mallory, i)]), 'approval_required', 'an approver outside the quorum\'s set counts for nothing');
  t.equal(run(p, i, [approve(alice, i), approve(bob, i)]).allow, true);
});

t.test('a quorum for contract calls applies to calls only', async (t) => {
  const p = policy({ quorums: [{ k: 1, approvers: ['carol'], when: { rule: 'contract_call' } }] });
  t.equal(run(p, evm()).allow, true);
  const call = safeTx();
  refused(t, run(p, call), 'approval_required', 'a call');
  t.equal(run(p, call, [approve(carol, call)]).allow, true);
  t.equal(run(policy({ quorums: [{ k: 1, approvers: ['carol'], when: { rule: 'policy_change' } }] }), call).allow, true, 'a policy-change quorum is not an intent\'s');
});

t.test('rules apply in order: lists and caps refuse before approvals are asked for', async (t) => {
  const p = policy({ per_transaction_cap: { [NATIVE]: '10' }, quorums: [{ k: 1, approvers: ['alice'], when: { rule: 'any' } }] });
  refused(t, run(p, evm({ amount: 11n })), 'cap_exceeded', 'a cap is hard: approvals do not lift it');
});
