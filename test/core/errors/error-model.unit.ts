// The error model's one registry and its HTTP table (docs/architecture.md "Error model"): every code has
// a kind and a status, the overrides name registered codes only, a CustodyError (and every shared error
// class) takes its kind from the registry, every (status, code) pair the API answered with before the
// model keeps its status, and the SDK reads the table backwards.
import t from 'tap';
import { ERROR_KINDS } from '../../../core/errors/error-kinds.ts';
import { ERROR_CODES, isErrorCode, kindOf, type ErrorCode } from '../../../core/errors/error-codes.ts';
import { CustodyError, isCustodyError } from '../../../core/errors/custody-error.ts';
import { HTTP_STATUS_BY_CODE, HTTP_STATUS_BY_KIND, httpStatusOfCode, kindOfHttpStatus } from '../../../core/errors/http-status.ts';
import { SignatureError } from '../../../core/http/http-signature.ts';
import { EndUserTokenError } from '../../../core/auth/end-user-token.ts';
import { IntentFormatError } from '../../../core/intents/canonical.ts';
import { EvmTemplateError } from '../../../core/chains/evm/evm-transaction.ts';
import { RosterError } from '../../../core/trust/roster.ts';
import { TrustEntryError } from '../../../core/trust/trust-entry.ts';
import { ChainError } from '../../../api/chains/chain-error.ts';
import { EsploraError } from '../../../api/chains/bitcoin/esplora-client.ts';
import { SpendError } from '../../../api/chains/bitcoin/build-spend.ts';
import { ProviderError } from '../../../api/branding/email-domains.ts';
import { ObjectStoreError } from '../../../api/adapters/object-store.ts';
import { httpStatusOf } from '../../../api/errors.ts';
import { CustodyApiError } from '../../../api/sdk/client.ts';

const CODES = Object.keys(ERROR_CODES) as ErrorCode[];

t.test('the HTTP table, spelled out', async (t) => {
  t.same(HTTP_STATUS_BY_KIND, {
    invalid: 400, unauthenticated: 401, refused: 403, not_found: 404, conflict: 409, limited: 429,
    aborted: 502, unavailable: 503, transport: 502, bug: 500,
  });
  t.same(HTTP_STATUS_BY_CODE, { payload_too_large: 413, unsupported_media_type: 415, validation_failed: 422, unknown_event: 422, email_domain_invalid: 422, address_proof_invalid: 422, safe_tx_mismatch: 422, safe_signature_invalid: 422, call_intent_mismatch: 422, mint_not_allowed: 422, mint_cap_exceeded: 422, not_token_holder: 422, token_call_reverted: 422, gasless_unavailable: 422, forward_signature_invalid: 422, gasless_would_revert: 422, module_call_mismatch: 422, module_call_refused: 422, asset_schema_invalid: 422, field_value_invalid: 422, attestation_signature_invalid: 422, precondition_failed: 412, precondition_required: 428 });
  t.same(Object.keys(HTTP_STATUS_BY_KIND).sort(), [...ERROR_KINDS].sort(), 'one status for every kind, no other key');
});

t.test('every registered code has a kind and an HTTP status', async (t) => {
  t.ok(CODES.length > 100, `${CODES.length} codes`);
  for (const code of CODES) {
    const { kind, summary } = ERROR_CODES[code];
    t.ok(ERROR_KINDS.includes(kind), `${code}: kind ${kind}`);
    t.ok(summary.length > 0, `${code}: a summary`);
    t.match(code, /^[a-z][a-z0-9_]*$/, `${code}: a slug`);
    const status = httpStatusOfCode(code);
    t.ok(Number.isInteger(status) && status >= 400 && status <= 599, `${code}: status ${status}`);
  }
});

t.test('the override table names only registered codes, each keeping its kind class', async (t) => {
  for (const [code, status] of Object.entries(HTTP_STATUS_BY_CODE)) {
    t.ok(isErrorCode(code), `${code} is registered`);
    if (!isErrorCode(code)) continue;
    t.not(status, HTTP_STATUS_BY_KIND[ERROR_CODES[code].kind], `${code}: an override differs from its kind's status`);
    // A client error stays a client error: an override never turns a caller's mistake into a 5xx.
    t.equal(Math.floor(status! / 100), Math.floor(HTTP_STATUS_BY_KIND[ERROR_CODES[code].kind] / 100), `${code}: same status class as its kind`);
  }
});

t.test('every (status, code) the API answered with before the model keeps its status', async (t) => {
  // Each pair thrown as ApiError(status, code, ...) in api/ before step 2 of "One shape for the codebase".
  const before: [number, string][] = [
    [400, 'bad_roster'], [400, 'cursor_filter_mismatch'], [400, 'invalid_cursor'], [400, 'invalid_request'], [400, 'usage'],
    [401, 'signature_required'], [401, 'unauthorized'],
    [403, 'cap_exceeded'], [403, 'forbidden'], [403, 'mfa_failed'], [403, 'mfa_required'], [403, 'role_denied'], [403, 'upload_denied'],
    [404, 'email_domain_not_found'], [404, 'not_found'],
    [409, 'conflict'], [409, 'email_domain_conflict'], [409, 'invalid_state'], [409, 'committee_mismatch'],
    [413, 'payload_too_large'], [415, 'unsupported_media_type'],
    [422, 'email_domain_invalid'], [422, 'unknown_event'], [422, 'validation_failed'],
    [429, 'rate_limited'],
    [502, 'email_domain_provider_error'], [502, 'object_store_error'],
    [503, 'email_domain_provider_unconfigured'], [503, 'unavailable'],
  ];
  for (const [status, code] of before) {
    t.ok(isErrorCode(code), `${code} is registered`);
    if (isErrorCode(code)) t.equal(httpStatusOf(new CustodyError(code, 'x')), status, `${code} -> ${status}`);
  }
});

t.test('a CustodyError takes its kind from the registry', async (t) => {
  for (const code of CODES) t.equal(new CustodyError(code, 'm').kind, ERROR_CODES[code].kind, code);
  const e = new CustodyError('cap_exceeded', 'over the cap', { culprits: ['n1'], cause: new Error('under') });
  t.equal(e.kind, 'refused');
  t.equal(e.code, 'cap_exceeded');
  t.equal(e.message, 'over the cap');
  t.same(e.culprits, ['n1']);
  t.equal((e.cause as Error).message, 'under');
  t.ok(isCustodyError(e, 'refused'));
  t.notOk(isCustodyError(e, 'invalid'));
  t.notOk(isCustodyError(new Error('plain')));
  t.equal(kindOf('no_such_code_from_a_newer_peer'), 'transport');
});

t.test('the shared and API-side error classes are CustodyErrors with registered codes', async (t) => {
  const cases: [CustodyError, string, ErrorCode, string][] = [
    // [error, class name, code, kind]
    [new SignatureError('expired', 'm'), 'SignatureError', 'expired', 'unauthenticated'],
    [new SignatureError('unknown_signing_key', 'm'), 'SignatureError', 'unknown_signing_key', 'unauthenticated'],
    [new SignatureError('replayed', 'm'), 'SignatureError', 'replayed', 'unauthenticated'],
    [new EndUserTokenError('wrong_end_user', 'm'), 'EndUserTokenError', 'wrong_end_user', 'refused'],
    [new IntentFormatError('m'), 'IntentFormatError', 'bad_intent', 'invalid'],
    [new EvmTemplateError('m'), 'EvmTemplateError', 'bad_template', 'invalid'],
    [new RosterError('m'), 'RosterError', 'bad_roster', 'invalid'],
    [new TrustEntryError('m'), 'TrustEntryError', 'bad_trust_log', 'refused'],
    [new ChainError('broadcast_rejected', 'm', true), 'ChainError', 'broadcast_rejected', 'refused'],
    [new ChainError('rpc_error', 'm', false), 'ChainError', 'rpc_error', 'transport'],
    [new EsploraError(500, 'm'), 'EsploraError', 'chain_backend_error', 'transport'],
    [new SpendError('insufficient_funds', 'm'), 'SpendError', 'insufficient_funds', 'refused'],
    [new ProviderError('invalid', 'm'), 'ProviderError', 'email_domain_invalid', 'invalid'],
    [new ProviderError('failure', 'm'), 'ProviderError', 'email_domain_provider_error', 'transport'],
    [new ObjectStoreError('m', 503), 'ObjectStoreError', 'object_store_error', 'transport'],
  ];
  for (const [err, name, code, kind] of cases) {
    t.ok(err instanceof CustodyError, `${name} is a CustodyError`);
    t.equal(err.name, name);
    t.equal(err.code, code, `${name} ${code}`);
    t.equal(err.kind, kind, `${name} ${code} is ${kind}`);
  }
  t.equal(new SignatureError('expired', 'm').reason, 'expired', 'the reason stays readable');
  t.equal(new EndUserTokenError('bad_end_user_token', 'm').reason, 'bad_end_user_token');
  t.equal(new EsploraError(404, 'm').status, 404, 'the backend status stays readable');
  t.equal(new ChainError('fee_ceiling', 'm', true).permanent, true);
});

t.test('the SDK reads the table backwards where one kind has the status', async (t) => {
  const expected: [number, string | undefined][] = [
    [400, 'invalid'], [401, 'unauthenticated'], [403, 'refused'], [404, 'not_found'], [409, 'conflict'],
    [413, 'invalid'], [415, 'invalid'], [422, 'invalid'], [429, 'limited'], [500, 'bug'], [503, 'unavailable'],
    [502, undefined], // aborted or transport
    [418, undefined], [504, undefined],
  ];
  for (const [status, kind] of expected) {
    t.equal(kindOfHttpStatus(status), kind, `${status}`);
    const e = new CustodyApiError(status, 'whatever_the_server_said', 'm');
    t.equal(e.kind, kind, `CustodyApiError ${status}`);
    t.equal(e.code, 'whatever_the_server_said', 'the code is the server string, registered or not');
  }
  // Round trip: a code's status read back gives the code's kind, wherever the status is unambiguous.
  for (const code of CODES) {
    const back = kindOfHttpStatus(httpStatusOfCode(code));
    if (back !== undefined) t.equal(back, ERROR_CODES[code].kind, `${code} round-trips`);
  }
});
