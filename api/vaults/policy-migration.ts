// The legacy policy of a vault (fixed at creation, checked by the API only: api/policy/policy.ts) as a
// version-1 policy document with the same rules (docs/policies.md "Migrating the legacy policies"). Only
// the customer's key can put it in the trust log: the API offers it (GET /v1/vaults/{id}/policy,
// `migration`) and the customer signs it (PUT, the SDK's or the CLI's `policy migrate`).
import { EVM_NETWORKS } from '../../core/chains/evm/evm-networks.ts';
import { BITCOIN_NETWORKS } from '../../core/chains/bitcoin/bitcoin-networks.ts';
import { parsePolicyDocument, type PolicyDocument } from '../../core/policy/policy-document.ts';
import type { Policy } from '../../core/api-schemas/policy.ts';
import type { VaultRecord } from './records.ts';

/** A legacy asset (`<chain>:native`, `<chain>:<token contract>`) as a policy asset, or undefined for a chain with no such name. */
export function policyAssetOfLegacy(asset: string): string | undefined {
  const at = asset.lastIndexOf(':');
  const [chain, what] = [asset.slice(0, at), asset.slice(at + 1).toLowerCase()];
  const evm = EVM_NETWORKS.find((n) => n.chain === chain);
  if (evm) return what === 'native' || /^0x[0-9a-f]{40}$/.test(what) ? `eip155:${evm.chainId}:${what}` : undefined;
  const btc = BITCOIN_NETWORKS.find((n) => n.chain === chain);
  return btc && what === 'native' ? `bitcoin:${btc.network}:native` : undefined;
}

function caps(c: Record<string, string> | undefined): Record<string, string> | undefined {
  if (!c) return undefined;
  const out: Record<string, string> = {};
  for (const [asset, amount] of Object.entries(c)) {
    const a = policyAssetOfLegacy(asset);
    if (!a) return undefined;
    out[a] = amount;
  }
  return out;
}

/** The vault's legacy policy as a policy document, or null when it has none or names an asset no policy document can. */
export function legacyPolicyMigration(v: Pick<VaultRecord, 'id' | 'policy'>): PolicyDocument | null {
  const p = v.policy as Policy | null | undefined;
  if (!p) return null;
  const doc: Record<string, unknown> = { format: 1, version: 1, vault_id: v.id, change_delay_seconds: 0, default_deny: false };
  if (p.per_transaction_cap) {
    const c = caps(p.per_transaction_cap);
    if (!c) return null;
    doc.per_transaction_cap = c;
  }
  if (p.rolling_window) {
    const c = caps(p.rolling_window.caps);
    if (!c) return null;
    doc.rolling_window = { seconds: p.rolling_window.seconds, caps: c };
  }
  if (p.recipient_allowlist) doc.recipient_allowlist = p.recipient_allowlist;
  if (p.recipient_denylist) doc.recipient_denylist = p.recipient_denylist;
  if (p.asset_allowlist) {
    const list = p.asset_allowlist.map(policyAssetOfLegacy);
    if (list.some((a) => a === undefined)) return null;
    doc.asset_allowlist = list;
  }
  try {
    return parsePolicyDocument(doc);
  } catch {
    return null;
  }
}
