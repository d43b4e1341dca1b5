// One registry of every error code the system raises, with its kind. A code is a stable machine slug:
// it is what crosses process boundaries (gRPC status details, SessionFailed, the HTTP body) and what
// callers branch on; messages are for people. Adding a code here is the only way to raise a new one:
// CustodyError takes an ErrorCode, so an unregistered string does not type-check.
import type { ErrorKind } from './error-kinds.ts';

interface CodeEntry {
  readonly kind: ErrorKind;
  readonly summary: string;
}

const entries = <T extends Record<string, CodeEntry>>(t: T) => t;
const e = (kind: ErrorKind, summary: string): CodeEntry => ({ kind, summary });

export const ERROR_CODES = entries({
  // ── Generic, used at every edge ────────────────────────────────────────────────────────────────────
  invalid_request: e('invalid', 'the body or parameters fail validation'),
  validation_failed: e('invalid', 'a field is rejected (platform API)'),
  payload_too_large: e('invalid', 'the body is larger than the route accepts'),
  unsupported_media_type: e('invalid', 'the body is not in a media type the route accepts'),
  invalid_cursor: e('invalid', 'a pagination cursor is malformed or from another list'),
  cursor_filter_mismatch: e('invalid', 'a pagination cursor was issued for other filters'),
  usage: e('invalid', 'a command-line invocation is wrong'),
  bad_config: e('invalid', 'a configuration value is missing or malformed'),
  unauthorized: e('unauthenticated', 'missing, malformed or invalid request signature or credential'),
  signature_required: e('unauthenticated', 'a production change needs an RFC 9421 request signature'),
  forbidden: e('refused', 'refused by policy, limits or authorization'),
  cap_exceeded: e('refused', 'a per-transaction limit was exceeded'),
  role_denied: e('refused', 'the caller lacks the required permission'),
  mfa_required: e('refused', 'the operation needs a second factor'),
  mfa_failed: e('refused', 'the second factor did not verify'),
  upload_denied: e('refused', 'the upload does not match what was presigned'),
  not_found: e('not_found', 'the resource is missing or not visible to the caller'),
  conflict: e('conflict', 'the resource is not in a state allowing the operation'),
  invalid_state: e('conflict', 'a delivery replay of a pending or delivered delivery'),
  rate_limited: e('limited', 'a quota or rate limit was reached'),
  unavailable: e('unavailable', 'a dependency is not available now; retry later'),
  internal: e('bug', 'an unexpected internal error'),
  bug: e('bug', 'a broken invariant of our own'),

  // ── Platform API (platform-api.md "Errors") ───────────────────────────────────────────────────────
  unknown_event: e('invalid', 'subscription to an event name outside the registry'),
  forbidden_key: e('invalid', 'a JSON body has a __proto__ key, or a constructor key holding a prototype'),
  idempotency_key_reused: e('conflict', 'an Idempotency-Key was used before with another request body'),
  email_domain_invalid: e('invalid', 'the provider rejects the domain'),
  email_domain_conflict: e('conflict', 'the domain is already registered'),
  email_domain_not_found: e('not_found', 'no such email domain for the tenant'),
  email_domain_provider_unconfigured: e('unavailable', 'the platform email provider is not set up'),
  email_domain_provider_error: e('transport', 'the email provider failed'),
  object_store_error: e('transport', 'the object store failed'),
  oidc_discovery_failed: e('transport', "the issuer's OpenID discovery document or JWKS could not be fetched"),
  oidc_discovery_invalid: e('invalid', 'the discovery document names another issuer, or it or its JWKS is malformed'),
  publishable_key_mismatch: e('refused', 'the publishable key is for another environment than the bearer key'),
  proof_invalid: e('unauthenticated', 'a member-auth provider proof does not verify against the registered application, or its challenge'),
  proof_replayed: e('conflict', 'a member-auth provider proof, or its challenge, was already used'),
  exchange_id_reused: e('conflict', 'an exchange_id came back with another proof, or after its session moved on'),
  member_auth_changed: e('conflict', 'the member-auth application changed while a proof was being exchanged'),
  member_binding_inactive: e('refused', 'the member has no active binding in the application'),
  member_session_invalid: e('unauthenticated', 'the member session is unknown, expired, ended, or not this caller\'s'),
  refresh_invalid: e('unauthenticated', 'the refresh credential is unknown, expired, or not this caller\'s'),
  refresh_replayed: e('unauthenticated', 'a used refresh credential came back: its session family is revoked'),
  caller_identity_refused: e('invalid', 'a member call carried a provider token or a caller-chosen member or holder id'),

  // ── Vault API and committees ─────────────────────────────────────────────────────────────────────
  committee_mismatch: e('conflict', 'the committee named in the request is not the one the service would seat'),
  bad_roster: e('invalid', 'the operator-signed node roster is malformed or does not verify'),
  stale_roster: e('refused', 'a roster older than one already seen'),
  unverified_committee: e('refused', 'a committee member is not vouched for by the roster or the trust log'),
  no_customer_node: e('unavailable', "the customer's own node is not attached or not named"),
  node_revoked: e('refused', 'the organization revoked this node\'s enrolment'),
  node_taken: e('conflict', 'another organization enrolled this node'),
  no_enrolled_node: e('conflict', 'the organization has no active enrolled node of the kind this tier needs'),
  unpinned_measurements: e('refused', "the TEE node's attested measurements are not among the ones the organization allows"),
  not_enough_nodes: e('unavailable', 'too few qualified nodes are attached for the committee'),
  node_not_attached: e('unavailable', 'a node the operation needs is not attached to the coordinator'),
  no_roster: e('unavailable', 'the coordinator has no operator-signed roster, so nodes join no key generation or reshare'),

  // ── Chains (API side) ────────────────────────────────────────────────────────────────────────────
  chain_unavailable: e('transport', 'the chain backend did not answer'),
  chain_backend_error: e('transport', 'the chain backend answered with an error status'),
  broadcast_rejected: e('refused', 'the network refused the signed transaction'),
  insufficient_funds: e('refused', 'the wallet cannot pay the amount and fees'),
  would_revert: e('refused', 'the transaction would revert'),
  bad_spend: e('invalid', 'a Bitcoin spend cannot be built as asked'),

  // ── Wallets (docs/platform/wallets.md) ───────────────────────────────────────────────────────────
  wallet_decommissioned: e('conflict', 'the wallet is decommissioned: it sends nothing and takes no payment request'),
  transactions_in_flight: e('conflict', 'a transaction of the wallet is not final, failed or rejected yet'),

  // ── Request signatures, intents, tokens, trust log ───────────────────────────────────────────────
  malformed_signature: e('unauthenticated', 'the Signature or Signature-Input header is malformed'),
  missing_signature: e('unauthenticated', 'no request signature'),
  missing_component: e('unauthenticated', 'a required component is not covered by the signature'),
  missing_parameter: e('unauthenticated', 'a required signature parameter is missing'),
  unsupported_component: e('unauthenticated', 'the signature covers a component that is not supported'),
  unsupported_algorithm: e('unauthenticated', 'the signature algorithm is not Ed25519'),
  expired: e('unauthenticated', 'the signature or token has expired'),
  not_yet_valid: e('unauthenticated', 'the signature or token is not valid yet'),
  validity_too_long: e('unauthenticated', 'the signature is valid for longer than allowed'),
  replayed: e('unauthenticated', 'the signature nonce was seen before'),
  bad_signature: e('unauthenticated', 'a signature does not verify'),
  unknown_signing_key: e('unauthenticated', 'the request signature names a key that is unknown or revoked'),
  malformed_input: e('invalid', 'a structure could not be parsed'),
  truncated: e('invalid', 'the bytes end early'),
  bad_intent: e('invalid', 'the intent is malformed'),
  bad_template: e('invalid', 'the transaction template is malformed or inconsistent'),
  bad_trust_log: e('refused', 'the trust log is malformed or does not verify'),
  bad_creation_request: e('refused', "the customer's signed creation request is missing or does not verify"),
  bad_reshare_request: e('refused', "the customer's signed reshare request is missing or does not verify"),
  bad_end_user_token: e('refused', 'the end-user token is malformed or does not verify'),
  end_user_token_required: e('refused', 'a hosted vault signs only with an end-user token'),
  token_intent_mismatch: e('refused', 'the end-user token names another intent'),
  wrong_end_user: e('refused', 'the end-user token is for another end user'),

  // ── Node authorization: what an honest node refuses to sign ─────────────────────────────────────
  refused: e('refused', 'the node refused the session'),
  wrong_organization: e('refused', "the intent names another organization than the vault's owner"),
  unknown_api_key: e('refused', 'the API key is not active for the organization on this node'),
  bad_intent_signature: e('refused', 'the intent signature does not verify'),
  intent_expiry_required: e('refused', 'the intent has no not_after'),
  intent_expiry_too_far: e('refused', "the intent's not_after is more than 24 hours ahead"),
  intent_expired: e('refused', 'the intent has expired'),
  intent_already_used: e('refused', 'the intent was already signed for another transaction'),
  digest_mismatch: e('refused', 'the digests asked for are not the ones the intent and template produce'),
  wrong_scheme: e('refused', 'the signature scheme does not fit the chain or address'),
  unsupported_scheme: e('refused', 'the scheme is not supported for this chain'),
  wrong_sender: e('refused', "the intent spends from another address than this vault's"),
  input_amounts_required: e('refused', 'a P2WPKH spend needs an intent naming its input amounts'),
  wrong_input_amounts: e('refused', "the template's input amounts differ from the intent's"),
  foreign_input: e('refused', "an input does not spend from the intent's address"),
  wrong_inputs: e('refused', "the inputs differ from the intent's"),
  wrong_outputs: e('refused', "the outputs differ from the intent's"),
  fee_ceiling: e('refused', "the fee exceeds the intent's ceiling"),
  not_a_party: e('refused', 'this node is not a party of the session'),
  epoch_mismatch: e('refused', "the session names another epoch than the node's"),
  package_mismatch: e('refused', "the key package differs from the node's"),
  committee_changed: e('refused', "the session's parties are not the vault's committee"),
  session_reused: e('refused', 'a session id was used before'),
  unsupported_protocol: e('invalid', 'the node does not run this protocol'),
  key_exists: e('conflict', "a node holds a share of this vault's key already"),
  unknown_key: e('not_found', "the node holds no share of this vault's key"),
  vault_exists: e('conflict', 'the coordinator has a vault with this id already'),
  unknown_vault: e('not_found', 'the coordinator has no vault with this id'),
  no_pending: e('conflict', 'no pending epoch to commit or abandon'),
  no_ot_setup: e('conflict', 'the vault key has no OT setup for ECDSA'),
  ot_busy: e('unavailable', 'another ECDSA run holds the OT pair; retry'),
  ot_retired: e('conflict', 'the OT material of a pair was retired; a new setup is needed'),
  failed: e('aborted', 'the operation failed after its retries'),

  // ── Node storage ─────────────────────────────────────────────────────────────────────────────────
  tampered: e('bug', 'sealed data does not match its head: the disk was changed'),
  rolled_back: e('bug', 'the sealed store is older than its rollback anchor'),
  unseal_failed: e('bug', 'sealed data cannot be opened with this node key'),
  no_head: e('bug', 'a store with records has no sealed head'),
  bad_storage_key: e('invalid', 'the storage key is missing or malformed'),
  bad_anchor: e('bug', 'the rollback anchor is malformed or does not open under this node key'),

  // ── Node link and transport ──────────────────────────────────────────────────────────────────────
  bad_hello: e('unauthenticated', 'the attach handshake does not verify'),
  identity_mismatch: e('unauthenticated', 'the node presented other keys than it was pinned with'),
  handshake_timeout: e('transport', 'the attach handshake did not finish in time'),
  wrong_session: e('aborted', 'a message names another session'),
  wrong_recipient: e('aborted', 'a direct envelope is addressed to another node'),
  decrypt_failed: e('aborted', 'a direct envelope does not decrypt'),
  malformed_envelope: e('aborted', 'an envelope is malformed or names another sender'),
  relay_fault: e('transport', 'a relayed envelope failed its checks: blamed on the relay, not on a party'),
  bad_version: e('invalid', 'an unknown wire or storage version'),
  instance_locked: e('conflict', 'another API instance already serves this database'),
  rpc_error: e('transport', 'a gRPC call failed without structured details'),
  party_failed: e('aborted', 'a party of the session reported a failure'),
  party_left: e('transport', 'a party detached during the session'),
  timeout: e('unavailable', 'a session did not finish in time'),

  // ── Protocol aborts and input errors (node/protocols) ───────────────────────────────────────────
  aggregation_failed: e('aborted', 'the aggregated signature does not verify'),
  bad_commitment: e('aborted', 'a commitment does not open'),
  bad_digest: e('invalid', 'a digest is not 32 bytes'),
  bad_encoding: e('invalid', 'a value is not validly encoded'),
  bad_epoch: e('invalid', 'an epoch number is out of range'),
  bad_key: e('invalid', 'a key is malformed'),
  bad_key_id: e('invalid', 'a vault key id is malformed'),
  bad_key_share: e('invalid', 'a stored key share is malformed'),
  bad_merkle_root: e('invalid', 'a taproot merkle root is malformed'),
  bad_message: e('aborted', 'a protocol message is malformed'),
  bad_multiplication: e('aborted', 'a multiplication check failed'),
  bad_ot: e('aborted', 'an oblivious-transfer message fails its check'),
  bad_ot_check: e('aborted', 'an OT extension consistency check failed'),
  bad_ot_setup: e('invalid', 'stored OT setup material is malformed'),
  bad_package: e('invalid', 'a key package is malformed'),
  bad_params: e('invalid', 'session parameters are malformed'),
  bad_parties: e('invalid', 'the parties of a session are malformed'),
  bad_path: e('invalid', 'a derivation path is malformed or hardened'),
  bad_point: e('aborted', 'a point is not on the curve or is the identity'),
  bad_presignature: e('invalid', 'a presignature is malformed or used'),
  bad_proof: e('aborted', 'a zero-knowledge proof does not verify'),
  bad_reveal: e('aborted', 'a revealed value does not match its commitment'),
  bad_scalar: e('aborted', 'a scalar is out of range'),
  bad_session: e('invalid', 'a session id is malformed'),
  bad_share: e('aborted', 'a share does not match its commitment'),
  bad_signature_share: e('aborted', 'a signature share does not verify'),
  bad_state: e('bug', 'a protocol state is used out of order'),
  bad_suite: e('invalid', 'an unknown ciphersuite'),
  bad_threshold: e('invalid', 'a threshold is out of range'),
  bad_tweak: e('invalid', 'a tweak is out of range'),
  bad_committee: e('invalid', 'a committee is malformed'),
  confirmation_mismatch: e('aborted', 'parties derived different keys'),
  degenerate_key: e('aborted', 'a key came out degenerate'),
  degenerate_nonce: e('aborted', 'a nonce came out degenerate'),
  duplicate_message: e('aborted', 'a party sent the same round twice'),
  equivocation: e('aborted', 'a party sent different broadcasts to different parties'),
  finished: e('bug', 'a message arrived after the run ended'),
  group_key_changed: e('aborted', 'a reshare would change the group key'),
  inconsistent_share: e('aborted', 'a share is inconsistent with the group key'),
  invalid_child: e('invalid', 'a derived child key is invalid'),
  invalid_signature: e('aborted', 'a produced signature does not verify'),
  not_enough_dealers: e('aborted', 'too few dealers remain after blame'),
  not_enough_signers: e('invalid', 'fewer signers than the threshold'),
  stale_message: e('aborted', 'a message for an earlier phase arrived late'),
  unknown_party: e('aborted', 'a message from a party outside the session'),

  // ── Enclave attestation (docs/tee.md) ───────────────────────────────────────────────────────────
  bad_attestation: e('invalid', 'an attestation document is malformed'),
  bad_attestation_signature: e('unauthenticated', "an attestation document's signature does not verify under its certificate"),
  bad_attestation_chain: e('unauthenticated', "an attestation document's certificate chain is broken or breaks a CA constraint"),
  untrusted_attestation_root: e('unauthenticated', 'an attestation document does not chain to a pinned root'),
  dev_attestation_root: e('refused', 'a development attestation root is configured without allowing it'),
  attestation_expired: e('unauthenticated', 'a certificate of an attestation document has expired'),
  attestation_not_yet_valid: e('unauthenticated', 'an attestation document or one of its certificates is dated after the verification time'),
  stale_attestation: e('unauthenticated', 'an attestation document is older than allowed'),
  debug_enclave: e('refused', 'the attestation document comes from a debug-mode enclave'),
  attestation_pcr_mismatch: e('refused', 'a PCR of the attestation document differs from the expected value'),
  attestation_nonce_mismatch: e('unauthenticated', 'the attestation document does not carry the expected nonce'),
});

export type ErrorCode = keyof typeof ERROR_CODES;

export function isErrorCode(code: string): code is ErrorCode {
  return Object.hasOwn(ERROR_CODES, code);
}

/** The kind of a registered code; an unknown code (from a newer peer) is a transport problem. */
export function kindOf(code: string): ErrorKind {
  return isErrorCode(code) ? ERROR_CODES[code].kind : 'transport';
}
