// The registry of the 47 subscribable webhook events (docs/platform/events.md). Nine names come from the
// spec, three are named here for events the spec describes, the vault and transaction events come from
// the vault API, and the rest cover the areas of the operation catalog. Sensitive events carry only
// identifiers and enumerated states; `example` lists each data field with an example value.
export interface EventType {
  name: string;
  domain: string;
  version: number;
  sensitive: boolean;
  description: string;
  example_payload: Record<string, string | number | boolean>;
  deprecated_at: string | null;
}

type Row = [name: string, sensitive: boolean, description: string, example: Record<string, string | number | boolean>];

const R: Row[] = [
  // given by the spec
  ['payment.confirmed', false, 'A payment confirmed.', { payment_id: 'pay_01', status: 'confirmed', amount: '125.00', currency: 'USDC' }],
  ['compliance.case.opened', true, 'A compliance case opened (manual review, flag, block or dispute).', { case_id: 'cas_01', case_type: 'manual_review', state: 'open', account_holder_id: 'ah_01' }],
  ['verification.holder.verified', true, 'Holder verification (KYC or KYB) approved.', { account_holder_id: 'ah_01', status: 'verified' }],
  ['verification.holder.rejected', true, 'Holder verification rejected; no reason is given.', { account_holder_id: 'ah_01', status: 'rejected' }],
  ['verification.holder.expired', true, 'Holder verification lapsed past its expiry.', { account_holder_id: 'ah_01', status: 'expired' }],
  ['tokenization.operation.failed', false, 'A privileged tokenization operation failed; reason tells an on-chain revert from an engine error.', { token_id: 'tok_01', operation_id: 'op_01', kind: 'mint', reason: 'onchain_revert' }],
  ['webhook.endpoint.disabled', false, 'An endpoint was disabled; its deliveries pause until it is re-enabled.', { endpoint_id: 'whe_01', enabled: false }],
  ['webhook.secret.rotated', false, 'An endpoint secret was rotated; the previous one stays valid for the overlap.', { endpoint_id: 'whe_01', previous_valid_until: '2026-01-02T00:00:00.000Z' }],
  ['webhook.test', false, 'Synthetic event from the test operation; real activity never produces it.', { endpoint_id: 'whe_01', message: 'test event' }],
  // described by the spec, named here
  ['compliance.case.resolved', true, 'A compliance case closed; the closed reason is withheld.', { case_id: 'cas_01', case_type: 'manual_review', state: 'closed' }],
  ['tokenization.operation.confirmed', false, 'A privileged tokenization operation confirmed on-chain.', { token_id: 'tok_01', operation_id: 'op_01', kind: 'mint', tx_hash: '0xabc1' }],
  ['webhook.delivery.dead_lettered', false, 'A delivery was dead-lettered: retries exhausted or a permanent 4xx.', { delivery_id: 'whd_01', endpoint_id: 'whe_01', event_id: 'evt_01', attempt_count: 7 }],
  // vault API
  ['vault.created', false, 'A vault was requested; key generation is under way.', { vault_id: 'vlt_01', tier: 'hosted', state: 'creating' }],
  ['vault.activated', false, 'Key generation finished; the vault can sign.', { vault_id: 'vlt_01', state: 'active' }],
  ['vault.frozen', false, 'A vault was frozen; it signs nothing until unfrozen.', { vault_id: 'vlt_01', state: 'frozen' }],
  ['vault.unfrozen', false, 'A frozen vault was returned to service.', { vault_id: 'vlt_01', state: 'active' }],
  ['vault.reshare.started', false, 'A key reshare to a new committee began.', { vault_id: 'vlt_01', state: 'resharing', rotation: 2 }],
  ['vault.reshare.completed', false, 'A key reshare finished; the new epoch signs.', { vault_id: 'vlt_01', state: 'active', rotation: 2 }],
  ['vault.wallet.created', false, 'A wallet was derived from a vault.', { vault_id: 'vlt_01', wallet_id: 'wal_01', chain: 'ethereum-sepolia' }],
  ['transaction.created', false, 'A transaction signing request was accepted.', { transaction_id: 'txn_01', vault_id: 'vlt_01', status: 'pending' }],
  ['transaction.signed', false, 'The cluster produced the signature.', { transaction_id: 'txn_01', status: 'signed' }],
  ['transaction.broadcast', false, 'A signed transaction was broadcast.', { transaction_id: 'txn_01', status: 'broadcast', tx_hash: '0xabc1' }],
  ['transaction.confirmed', false, 'A broadcast transaction confirmed on-chain.', { transaction_id: 'txn_01', status: 'confirmed', confirmations: 12 }],
  ['transaction.failed', false, 'A transaction failed; reason is an enumerated code.', { transaction_id: 'txn_01', status: 'failed', reason: 'policy_denied' }],
  // account_holders
  ['account_holder.created', true, 'An account holder was created (pending verification).', { account_holder_id: 'ah_01', status: 'pending_verification', verification_status: 'unverified', version: 1 }],
  ['account_holder.updated', true, 'An account holder changed (fields, member link, status or verification status); read it for the new values.', { account_holder_id: 'ah_01', status: 'active', verification_status: 'verified', version: 3 }],
  ['account_holder.consent.accepted', true, 'An account holder accepted the current tenant policies.', { account_holder_id: 'ah_01', consent_id: 'cns_01' }],
  ['account_holder.data_export.ready', true, 'A requested data export is ready.', { account_holder_id: 'ah_01', export_id: 'dex_01', status: 'ready' }],
  ['contact.created', true, 'A contact was created.', { contact_id: 'con_01', account_holder_id: 'ah_01' }],
  // payment
  ['payment.created', false, 'A payment was created.', { payment_id: 'pay_01', status: 'pending', amount: '125.00', currency: 'USDC' }],
  ['payment.failed', false, 'A payment failed; reason is an enumerated code.', { payment_id: 'pay_01', status: 'failed', reason: 'insufficient_funds' }],
  ['payment.cancelled', false, 'A payment was cancelled before signing.', { payment_id: 'pay_01', status: 'cancelled' }],
  ['payment_request.created', false, 'A payment request was sent.', { payment_request_id: 'prq_01', status: 'open' }],
  ['payment_request.approved', false, 'A payment request was approved.', { payment_request_id: 'prq_01', status: 'approved', payment_id: 'pay_01' }],
  ['payment_request.declined', false, 'A payment request was declined.', { payment_request_id: 'prq_01', status: 'declined' }],
  ['escrow.created', false, 'An escrow was opened.', { escrow_id: 'esc_01', status: 'open' }],
  ['escrow.released', false, 'An escrow released its funds.', { escrow_id: 'esc_01', status: 'released' }],
  ['escrow.cancelled', false, 'An escrow was cancelled.', { escrow_id: 'esc_01', status: 'cancelled' }],
  // funding
  ['funding_request.completed', false, 'A funding request completed: the fiat settled and the stablecoin was minted to the holder\'s wallet. Amounts in base units (cents; token units).', { funding_request_id: 'fnd_01', account_holder_id: 'ah_01', status: 'completed', fiat_amount: '50000', currency: 'USD', stablecoin_amount: '500000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['funding_request.failed', false, 'A funding request ended without a mint: status failed (reason: an enumerated rail failure or mint_reverted) or returned (the rail returned the fiat before minting).', { funding_request_id: 'fnd_01', account_holder_id: 'ah_01', status: 'failed', reason: 'insufficient_funds', fiat_amount: '50000', currency: 'USD' }],
  ['off_ramp_request.completed', false, 'An off-ramp paid out: the holder\'s transfer to the burn address was final and the rail settled the fiat. Amounts in base units.', { off_ramp_request_id: 'ofr_01', account_holder_id: 'ah_01', status: 'completed', fiat_amount: '50000', currency: 'USD', stablecoin_amount: '500000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['off_ramp_request.failed', false, 'An off-ramp ended without a payout: status failed or returned (the rail\'s enumerated reason; the fiat stays owed to the holder), or expired (reason no_transfer: no transfer within the window).', { off_ramp_request_id: 'ofr_01', account_holder_id: 'ah_01', status: 'failed', reason: 'account_invalid', fiat_amount: '50000', currency: 'USD' }],
  // tokenization
  ['token.deployed', false, 'A token contract was deployed.', { token_id: 'tok_01', standard: 'erc20', chain: 'ethereum-sepolia', address: '0x0000000000000000000000000000000000000001' }],
  ['tokenization.distribution.executed', false, 'A distribution was executed.', { token_id: 'tok_01', distribution_id: 'dst_01', status: 'executed' }],
  ['tokenization.corporate_action.advanced', false, 'A corporate action moved to its next stage.', { token_id: 'tok_01', corporate_action_id: 'cac_01', stage: 'record_date' }],
  // platform and tenant
  ['integration_gateway.status_changed', false, 'An integration gateway changed status.', { gateway_id: 'gwy_01', status: 'active' }],
  ['branding.email_domain.verified', false, 'A sending domain finished verification.', { domain_id: 'edm_01', status: 'verified' }],
];

function domainOf(name: string): string {
  return name.split('.')[0]!;
}

export const EVENT_TYPES: readonly EventType[] = Object.freeze(
  R.map(([name, sensitive, description, example]) => Object.freeze({ name, domain: domainOf(name), version: 1, sensitive, description, example_payload: example, deprecated_at: null })),
);

export const EVENT_NAMES: ReadonlySet<string> = new Set(EVENT_TYPES.map((e) => e.name));

export function eventType(name: string): EventType | undefined {
  return EVENT_TYPES.find((e) => e.name === name);
}

/** Sensitive events may carry identifiers, enumerated states and counts only: no free text. */
export function sensitiveDataAllowed(data: Record<string, unknown>): boolean {
  return Object.entries(data).every(([k, v]) => (typeof v === 'number' || typeof v === 'boolean') || (typeof v === 'string' && (/_id$/.test(k) ? /^[a-z]{2,4}_[0-9A-Za-z]+$/.test(v) : /^[a-z_]{1,40}$/.test(v))));
}
