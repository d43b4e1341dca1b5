// Which export rules a node applies (docs/export.md, docs/policies.md "Export"): the `export` section of the
// vault's policy in force in the node's own trust state, and the configured default where there is none
// (no policy, a policy without the section, a version not yet in force).
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { defaultExportGovernance, policyExportGovernance } from '../../node/runtime/authorization/export-governance.ts';
import { parsePolicyDocument } from '../../core/policy/policy-document.ts';
import type { OrgTrust } from '../../node/runtime/authorization/trust-state.ts';

const key = (n: number) => bytesToHex(ed25519.getPublicKey(new Uint8Array(32).fill(n)));
const VAULT = 'vault_x';
const doc = (version: number, extra: Record<string, unknown>) => parsePolicyDocument({
  format: 1, version, vault_id: VAULT, change_delay_seconds: 3600, approvers: [{ id: 'alice', public_key: key(1) }, { id: 'bob', public_key: key(2) }], ...extra,
});
const NOW = 1_800_000_000;

t.test('the export section of the policy in force governs; otherwise the default', async (t) => {
  const versions = [
    { doc: doc(1, {}), hash: 'h1', effectiveAt: NOW - 100, tightening: true },
    { doc: doc(2, { export: { approvers_k: 2, approvers: ['alice', 'bob'], delay_seconds: 600 } }), hash: 'h2', effectiveAt: NOW - 10, tightening: true },
    { doc: doc(3, { export: { approvers_k: 1, approvers: ['bob'], delay_seconds: 60 } }), hash: 'h3', effectiveAt: NOW + 3600, tightening: false },
  ];
  const state = { policies: { [VAULT]: { versions } } } as unknown as OrgTrust;
  const seen: string[] = [];
  const trust = { state: async (org: string) => (seen.push(org), state) };
  const g = policyExportGovernance(trust, defaultExportGovernance(86_400), () => NOW * 1000);
  const rules = await g.forVault('org_a', VAULT);
  t.same([rules.k, rules.approverKeys.map((k) => bytesToHex(k)), rules.delaySeconds], [2, [key(1), key(2)], 600], 'version 2 is in force: its quorum and delay; version 3, a loosening, is not yet');
  t.same(seen, ['org_a'], 'read from the owner\'s trust state');
  t.same(await g.forVault('org_a', 'vault_other'), { k: 0, approverKeys: [], delaySeconds: 86_400 }, 'a vault without a policy: the default');
  const early = policyExportGovernance(trust, defaultExportGovernance(86_400), () => (NOW - 50) * 1000);
  t.same((await early.forVault('org_a', VAULT)).delaySeconds, 86_400, 'version 1 in force has no export section: the default');
});
