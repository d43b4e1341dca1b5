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
  ['payment.confirmed', false, 'A payment confirmed: every transfer (the principal and each fee) final on chain. Amounts in base units of the asset.', { payment_id: 'pay_01', status: 'confirmed', account_holder_id: 'ah_01', amount: '1000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', fees_total: '4006' }],
  ['compliance.case.opened', true, 'A compliance case opened (manual review, flag, block or dispute): a payment went ahead past a failed review check (accept_review) and waits to be decided.', { case_id: 'cas_01', case_type: 'manual_review', state: 'open', account_holder_id: 'ah_01', payment_id: 'pay_01' }],
  ['verification.holder.verified', true, 'Holder verification (KYC or KYB) approved.', { account_holder_id: 'ah_01', status: 'verified' }],
  ['verification.holder.rejected', true, 'Holder verification rejected; no reason is given.', { account_holder_id: 'ah_01', status: 'rejected' }],
  ['verification.holder.expired', true, 'Holder verification lapsed past its expiry.', { account_holder_id: 'ah_01', status: 'expired' }],
  ['tokenization.operation.failed', false, 'A privileged tokenization operation failed; reason tells an on-chain revert (onchain_revert, error: the decoded revert) from an engine error (engine_error, error: what failed).', { token_id: 'tok_01', operation_id: 'op_01', kind: 'mint', reason: 'onchain_revert', error: 'MintCapExceeded(minter=0x…, requested=5, remaining=2)' }],
  ['webhook.endpoint.disabled', false, 'An endpoint was disabled; its deliveries pause until it is re-enabled. reason: requested (PATCH enabled false) or gone (the receiver answered 410 Gone).', { endpoint_id: 'whe_01', enabled: false, reason: 'gone' }],
  ['webhook.secret.rotated', false, 'An endpoint secret was rotated; the previous one stays valid for the overlap.', { endpoint_id: 'whe_01', previous_valid_until: '2026-01-02T00:00:00.000Z' }],
  ['webhook.test', false, 'Synthetic event from the test operation; real activity never produces it.', { endpoint_id: 'whe_01', message: 'test event' }],
  // described by the spec, named here
  ['compliance.case.resolved', true, 'A compliance case closed: its payment was decided (approved, canceled or failed); the closed reason is withheld.', { case_id: 'cas_01', case_type: 'manual_review', state: 'closed', account_holder_id: 'ah_01', payment_id: 'pay_01' }],
  ['tokenization.operation.confirmed', false, 'A privileged tokenization operation confirmed on-chain.', { token_id: 'tok_01', operation_id: 'op_01', kind: 'mint', tx_hash: '0xabc1' }],
  ['webhook.delivery.dead_lettered', false, 'A delivery was dead-lettered: retries exhausted or a permanent 4xx.', { delivery_id: 'whd_01', endpoint_id: 'whe_01', event_id: 'evt_01', attempt_count: 7 }],
  // vault API
  ['vault.created', false, 'A vault was requested; key generation is under way.', { vault_id: 'vlt_01', tier: 'hosted', state: 'creating', status: 'creating' }],
  ['vault.activated', false, 'Key generation finished; the vault can sign.', { vault_id: 'vlt_01', state: 'active', status: 'active', public_key: '0279be667ef9dcbbac55a06295ce870b07029bfcdb2dce28d959f2815b16f81798' }],
  ['vault.failed', false, 'Key generation failed for good; the vault cannot sign (code: the enumerated cause; retry with the vault API).', { vault_id: 'vlt_01', state: 'failed', status: 'failed', code: 'no_customer_node' }],
  ['vault.frozen', false, 'A vault was frozen; it signs nothing until unfrozen.', { vault_id: 'vlt_01', state: 'frozen', status: 'frozen' }],
  ['vault.unfrozen', false, 'A frozen vault was returned to service (state: the one it was frozen from).', { vault_id: 'vlt_01', state: 'active', status: 'active' }],
  ['vault.reshare.started', false, 'A key reshare to a new committee began (rotation: the epoch still signing; target_tier: the tier it reshares to).', { vault_id: 'vlt_01', state: 'resharing', status: 'resharing', rotation: 1, tier: 'hosted', target_tier: 'self' }],
  ['vault.reshare.completed', false, 'A key reshare finished; the new epoch (rotation) signs, in the vault\'s new tier.', { vault_id: 'vlt_01', state: 'active', status: 'active', rotation: 2, tier: 'self' }],
  ['vault.export.requested', false, 'A key export was requested: each signer node\'s delay starts when it sees the request (docs/export.md). A customer that did not ask for it revokes the API key that signed it.', { vault_id: 'vlt_01', export_id: 'exp_0123456789abcdef', not_before: 1767225600 }],
  ['vault.exported', false, 'Enough signer nodes sealed their shares of an export to the customer\'s recipient key to reconstruct the key.', { vault_id: 'vlt_01', export_id: 'exp_0123456789abcdef', shares: 2 }],
  ['vault.policy.changed', false, 'A new version of a vault\'s policy was signed into its trust log (docs/policies.md): a tightening is in force at once, any other change after the policy\'s delay (effective_at, Unix seconds, as the API saw it). A customer that did not make it revokes the API key that signed it.', { vault_id: 'vlt_01', version: 3, effective_at: 1767225600, tightening: false }],
  ['transaction.approval_required', false, 'A transaction waits for approvals its vault\'s policy asks for (docs/policies.md): approvers sign the intent hash under the policy version (POST /v1/transactions/{id}/approvals) before its not_after.', { transaction_id: 'txn_01', vault_id: 'vlt_01', state: 'awaiting_approval', status: 'awaiting_approval', intent_sha256: '5c6d00000000000000000000000000000000000000000000000000000000c9e1', policy_version: 2, approvals_missing: 2 }],
  ['vault.wallet.created', false, 'A wallet was derived from a vault.', { vault_id: 'vlt_01', wallet_id: 'wal_01', chain: 'ethereum-sepolia', address: '0x0000000000000000000000000000000000000001' }],
  ['transaction.broadcast', false, 'A signed transaction was broadcast.', { transaction_id: 'txn_01', vault_id: 'vlt_01', state: 'broadcast', status: 'broadcast', tx_hash: '0xabc1' }],
  ['transaction.confirmed', false, 'A broadcast transaction confirmed on-chain.', { transaction_id: 'txn_01', vault_id: 'vlt_01', state: 'confirmed', status: 'confirmed', tx_hash: '0xabc1', confirmations: 1 }],
  ['transaction.final', false, 'A confirmed transaction reached the chain\'s finality depth: it will not be reorganized away.', { transaction_id: 'txn_01', vault_id: 'vlt_01', state: 'final', status: 'final', tx_hash: '0xabc1', confirmations: 64 }],
  ['transaction.failed', false, 'A transaction ended without being final: status failed (a chain condition: dropped, reverted, approval_expired, signing_unavailable, ...) or rejected (by the signers, signers_refused, or an approver, rejected_by_approver); reason is that enumerated code (the words after it are in GET /v1/transactions/{id}). A transaction that was broadcast carries its tx_hash too.', { transaction_id: 'txn_01', vault_id: 'vlt_01', state: 'rejected', status: 'rejected', reason: 'rejected_by_approver' }],
  // account_holders
  ['account_holder.created', true, 'An account holder was created (pending verification).', { account_holder_id: 'ah_01', status: 'pending_verification', verification_status: 'unverified', version: 1 }],
  ['account_holder.updated', true, 'An account holder changed (fields, member link, status or verification status); read it for the new values.', { account_holder_id: 'ah_01', status: 'active', verification_status: 'verified', version: 3 }],
  ['account_holder.consent.accepted', true, 'An account holder accepted the current tenant policies.', { account_holder_id: 'ah_01', consent_id: 'cns_01' }],
  // payment
  ['payment.created', false, 'A payment was created; it waits for the payer member\'s approval. Amounts in base units of the asset.', { payment_id: 'pay_01', status: 'requires_authorization', account_holder_id: 'ah_01', amount: '1000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', fees_total: '4006' }],
  ['payment.failed', false, 'A payment failed; reason is an enumerated code (a transaction failed, was rejected, dropped or reverted, or the approval ended half used).', { payment_id: 'pay_01', status: 'failed', account_holder_id: 'ah_01', reason: 'transaction_dropped' }],
  ['payment.cancelled', false, 'A payment was canceled before any of its transactions existed (its member action, if any, revoked).', { payment_id: 'pay_01', status: 'canceled', account_holder_id: 'ah_01' }],
  ['payment_request.created', false, 'A payment request was made: the requester asks the payer for the amount (docs/platform/payment-requests.md). Amount in base units; the memo is never sent.', { payment_request_id: 'prq_01', status: 'pending', requester_account_holder_id: 'ah_02', payer_account_holder_id: 'ah_01', amount: '5000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['payment_request.approved', false, 'A payment request was approved: its payment (kind payment_request) was made and awaits the payer member\'s authorization.', { payment_request_id: 'prq_01', status: 'approved', requester_account_holder_id: 'ah_02', payer_account_holder_id: 'ah_01', amount: '5000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', payment_id: 'pay_01' }],
  ['payment_request.declined', false, 'A payment request was declined by the payer; reason is an enumerated code, present when the payer gave one.', { payment_request_id: 'prq_01', status: 'declined', requester_account_holder_id: 'ah_02', payer_account_holder_id: 'ah_01', amount: '5000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', reason: 'incorrect_amount' }],
  ['payment_request.cancelled', false, 'A payment request was canceled by the requester.', { payment_request_id: 'prq_01', status: 'canceled', requester_account_holder_id: 'ah_02', payer_account_holder_id: 'ah_01', amount: '5000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['payment_request.reminded', false, 'The payer was reminded of a pending payment request; reminder_count is 1 to 3.', { payment_request_id: 'prq_01', status: 'pending', requester_account_holder_id: 'ah_02', payer_account_holder_id: 'ah_01', amount: '5000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', reminder_count: 1 }],
  ['escrow.released', false, 'An escrow released its funds: the payer\'s release is final on chain and the payee holds the amount.', { escrow_id: 'esc_01', status: 'released', amount: '100000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', payer_account_holder_id: 'ah_01', payee_account_holder_id: 'ah_02' }],
  ['escrow.cancelled', false, 'An escrow ended without paying the payee: status canceled (by the customer before any deposit), expired (not funded by its deadline) or refunded (the contract returned the funds to the payer; final on chain).', { escrow_id: 'esc_01', status: 'refunded', amount: '100000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3', payer_account_holder_id: 'ah_01', payee_account_holder_id: 'ah_02' }],
  // funding
  ['funding_request.completed', false, 'A funding request completed: the fiat settled and the stablecoin was minted to the holder\'s wallet. Amounts in base units (cents; token units).', { funding_request_id: 'fnd_01', account_holder_id: 'ah_01', status: 'completed', fiat_amount: '50000', currency: 'USD', stablecoin_amount: '500000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['funding_request.failed', false, 'A funding request ended without a mint: status failed (reason: an enumerated rail failure or mint_reverted) or returned (the rail returned the fiat before minting).', { funding_request_id: 'fnd_01', account_holder_id: 'ah_01', status: 'failed', reason: 'insufficient_funds', fiat_amount: '50000', currency: 'USD' }],
  ['off_ramp_request.completed', false, 'An off-ramp paid out: the holder\'s transfer to the burn address was final and the rail settled the fiat. Amounts in base units.', { off_ramp_request_id: 'ofr_01', account_holder_id: 'ah_01', status: 'completed', fiat_amount: '50000', currency: 'USD', stablecoin_amount: '500000000000000000000', asset: 'evm-local:0x5fbdb2315678afecb367f032d93f642f64180aa3' }],
  ['off_ramp_request.failed', false, 'An off-ramp ended without a payout: status failed or returned (the rail\'s enumerated reason; the fiat stays owed to the holder), or expired (reason no_transfer: no transfer within the window).', { off_ramp_request_id: 'ofr_01', account_holder_id: 'ah_01', status: 'failed', reason: 'account_invalid', fiat_amount: '50000', currency: 'USD' }],
  // tokenization
  ['token.deployed', false, 'A token contract was deployed.', { token_id: 'tok_01', standard: 'erc20', chain: 'ethereum-sepolia', address: '0x0000000000000000000000000000000000000001' }],
  // platform and tenant
  ['integration_gateway.status_changed', false, 'An integration gateway changed status.', { gateway_id: 'gwy_01', status: 'active' }],
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

/**
 * The only data fields each sensitive event carries: ids, enumerated states and numbers (the spec's rule;
 * docs/platform/events.md). A sensitive event without a row here carries nothing.
 */
export const SENSITIVE_FIELDS: Readonly<Record<string, readonly string[]>> = Object.freeze({
  'compliance.case.opened': ['case_id', 'case_type', 'state', 'account_holder_id', 'payment_id'],
  'compliance.case.resolved': ['case_id', 'case_type', 'state', 'account_holder_id', 'payment_id'],
  'verification.holder.verified': ['account_holder_id', 'status'],
  'verification.holder.rejected': ['account_holder_id', 'status'],
  'verification.holder.expired': ['account_holder_id', 'status'],
  'account_holder.created': ['account_holder_id', 'status', 'verification_status', 'version'],
  'account_holder.updated': ['account_holder_id', 'status', 'verification_status', 'version'],
  'account_holder.consent.accepted': ['account_holder_id', 'consent_id'],
});

/**
 * Sensitive event `name` may carry identifiers, enumerated states and counts only (no free text), in
 * the fields of its row in SENSITIVE_FIELDS only.
 */
export function sensitiveDataAllowed(data: Record<string, unknown>, name: string): boolean {
  const allowed = SENSITIVE_FIELDS[name] ?? [];
  if (Object.keys(data).some((k) => !allowed.includes(k))) return false;
  return Object.entries(data).every(([k, v]) => (typeof v === 'number' || typeof v === 'boolean') || (typeof v === 'string' && (/_id$/.test(k) ? /^[a-z]{2,4}_[0-9A-Za-z]+$/.test(v) : /^[a-z_]{1,40}$/.test(v))));
}
