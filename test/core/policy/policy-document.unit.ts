// The policy document (docs/policies.md "The document"): strict parsing, one canonical encoding and
// hash, the export section the export flow reads, and which changes count as tightening (at once) or
// loosening (after the delay).
import t from 'tap';
import { canonicalJson, encodePolicy, exportGovernance, parsePolicyDocument, policyHash, PolicyFormatError } from '../../../core/policy/policy-document.ts';
import { isTightening } from '../../../core/policy/policy-change.ts';
import { alice, bob, carol, NATIVE, policy, TOKEN, VAULT } from './policy-fixtures.ts';

const approvers = [alice, bob, carol].map((a) => ({ id: a.id, public_key: a.publicKey }));
const base = { format: 1, version: 1, vault_id: VAULT, approvers };

t.test('a document parses with its defaults, and has one canonical encoding and hash', async (t) => {
  const d = parsePolicyDocument({ ...base, recipient_allowlist: [`0x${'AB'.repeat(20)}`] });
  t.equal(d.change_delay_seconds, 0);
  t.equal(d.default_deny, false);
  t.same(d.recipient_allowlist, [`0x${'ab'.repeat(20)}`], 'EVM addresses lower case');
  const reordered = parsePolicyDocument({ recipient_allowlist: [`0x${'ab'.repeat(20)}`], approvers, vault_id: VAULT, version: 1, format: 1, change_delay_seconds: 0 });
  t.same(encodePolicy(d), encodePolicy(reordered), 'key order and defaults do not change the encoding');
  t.equal(policyHash(d), policyHash(reordered));
  t.not(policyHash(d), policyHash({ ...d, version: 2 }));
  t.equal(canonicalJson({ b: [2, { d: 1, c: 'x' }], a: true }), '{"a":true,"b":[2,{"c":"x","d":1}]}');
});

t.test('bad documents are refused with bad_policy naming the problem', async (t) => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ ...base, surprise: 1 }, /unknown field surprise/],
    [{ ...base, format: 2 }, /format 2/],
    [{ ...base, version: 0 }, /version/],
    [{ ...base, per_transaction_cap: { 'evm-local:native': '1' } }, /asset/],
    [{ ...base, per_transaction_cap: { [NATIVE]: '01' } }, /per_transaction_cap/],
    [{ ...base, rolling_window: { seconds: 59, caps: {} } }, /seconds/],
    [{ ...base, rolling_window: { seconds: 60, caps: {}, extra: 1 } }, /unknown field extra/],
    [{ ...base, recipient_denylist: ['0xab', '0xab'] }, /twice/],
    [{ ...base, contract_calls: [{ chain: 'eip155:1', contract: TOKEN, selectors: ['a9059cbb'] }] }, /selectors/],
    [{ ...base, approvers: [...approvers, { id: 'x', public_key: alice.publicKey }] }, /two ids/],
    [{ ...base, approvers: [{ id: 'bad', public_key: '00'.repeat(32) }] }, /Ed25519/],
    [{ ...base, quorums: [{ k: 2, approvers: ['alice', 'dave'], when: { rule: 'any' } }] }, /dave is not one of/],
    [{ ...base, quorums: [{ k: 3, approvers: ['alice', 'bob'], when: { rule: 'any' } }] }, /k must be/],
    [{ ...base, quorums: [{ k: 1, approvers: ['alice'], when: { rule: 'any', above: { [NATIVE]: '1' } } }] }, /exactly one/],
    [{ ...base, quorums: [{ k: 1, approvers: ['alice'], when: { rule: 'sometimes' } }] }, /rule/],
    [{ ...base, export: { approvers_k: 1, approvers: ['alice'] } }, /delay_seconds is required/],
    [{ ...base, export: { approvers_k: 2, approvers: ['alice'], delay_seconds: 0 } }, /approvers_k/],
    [{ ...base, change_delay_seconds: 31 * 24 * 3600 }, /change_delay_seconds/],
    [{ ...base, default_deny: 'yes' }, /default_deny/],
  ];
  for (const [doc, why] of cases) t.throws(() => parsePolicyDocument(doc), { constructor: PolicyFormatError, code: 'bad_policy', message: why }, String(why));
});

t.test('the export section, for the export flow', async (t) => {
  t.equal(exportGovernance(policy()), null, 'none named');
  t.equal(exportGovernance(null), null, 'no policy');
  t.same(exportGovernance(policy({ export: { approvers_k: 2, approvers: ['alice', 'carol'], delay_seconds: 86400 } })), {
    k: 2, approverKeys: [{ id: 'alice', publicKey: alice.publicKey }, { id: 'carol', publicKey: carol.publicKey }], delaySeconds: 86400,
  });
});

t.test('tightening applies at once; anything not provably tighter is a loosening', async (t) => {
  const prev = policy({
    change_delay_seconds: 3600, per_transaction_cap: { [NATIVE]: '100' }, rolling_window: { seconds: 3600, caps: { [NATIVE]: '500' } },
    recipient_allowlist: ['0x' + 'aa'.repeat(20), '0x' + 'bb'.repeat(20)], recipient_denylist: ['0x' + 'cc'.repeat(20)], asset_allowlist: [NATIVE],
    contract_calls: [{ chain: 'eip155:1', contract: TOKEN, selectors: ['0xa9059cbb', '0x095ea7b3'] }],
    quorums: [{ k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '50' } } }],
    export: { approvers_k: 2, approvers: ['alice', 'bob'], delay_seconds: 600 },
  });
  const raw = JSON.parse(canonicalJson(prev)) as Record<string, unknown>;
  const next = (over: Record<string, unknown>) => parsePolicyDocument({ ...raw, version: 2, ...over });
  t.equal(isTightening(prev, next({})), true, 'the same rules');
  const tighter: Record<string, unknown>[] = [
    { per_transaction_cap: { [NATIVE]: '99' } },
    { rolling_window: { seconds: 7200, caps: { [NATIVE]: '500' } } },
    { recipient_allowlist: ['0x' + 'aa'.repeat(20)] },
    { recipient_denylist: ['0x' + 'cc'.repeat(20), '0x' + 'dd'.repeat(20)] },
    { contract_calls: [{ chain: 'eip155:1', contract: TOKEN, selectors: ['0xa9059cbb'] }] },
    { quorums: [{ k: 3, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '10' } } }] },
    { default_deny: true },
    { change_delay_seconds: 7200 },
    { export: { approvers_k: 2, approvers: ['alice', 'bob'], delay_seconds: 6000 } },
  ];
  for (const over of tighter) t.equal(isTightening(prev, next(over)), true, `tighter: ${Object.keys(over).join()}`);
  const looser: Record<string, unknown>[] = [
    { per_transaction_cap: { [NATIVE]: '101' } },
    { per_transaction_cap: undefined },
    { rolling_window: { seconds: 1800, caps: { [NATIVE]: '500' } } },
    { recipient_allowlist: ['0x' + 'aa'.repeat(20), '0x' + 'ee'.repeat(20)] },
    { recipient_denylist: [] },
    { asset_allowlist: [NATIVE, 'eip155:5:native'] },
    { contract_calls: [{ chain: 'eip155:1', contract: TOKEN, selectors: ['0xa9059cbb', '0x23b872dd'] }] },
    { quorums: [{ k: 1, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '50' } } }] },
    { quorums: [{ k: 2, approvers: ['alice', 'bob', 'carol'], when: { above: { [NATIVE]: '51' } } }] },
    { change_delay_seconds: 60 },
    { approvers: [{ id: 'alice', public_key: carol.publicKey }, { id: 'bob', public_key: bob.publicKey }, { id: 'carol', public_key: alice.publicKey }] },
    { export: { approvers_k: 1, approvers: ['alice', 'bob'], delay_seconds: 600 } },
    { export: undefined },
  ];
  for (const over of looser) t.equal(isTightening(prev, next(over)), false, `looser: ${JSON.stringify(over).slice(0, 60)}`);
});
