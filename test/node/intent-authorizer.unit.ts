// The node's signing authorization against its own trust registry (docs/trust.md): the carried log is
// applied first, so a key registered through the API signs at once and a revoked one is refused even
// when a later log omits the revocation; a hosted key's end-user token must verify, name the bound
// end user and this exact intent.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { toHex as viemHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { decodeIntent, encodeIntent, signIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer, type SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { SessionRefused } from '../../node/runtime/session-host.ts';
import { signedEntry, signer, type Signer } from '../core/trust/trust-fixtures.ts';
import { mintCalldata } from '../../core/chains/evm/token-call-data.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_signing';
const operator = seed('authorizer operator');
const first = signer(ORG, seed('authorizer first'));
const second = signer(ORG, seed('authorizer second'));
const bootstrap = signBootstrap(ORG, first.publicKey, 1_795_000_000, operator);
const add = signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey });
const groupSecret = seed('authorizer group key');
const groupKey = bytesToHex(secp256k1.getPublicKey(groupSecret, true));
const NOW = 1_795_100_000_000;

async function setup(t: Test) {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'authz-')), new Uint8Array(32).fill(9));
  t.teardown(() => store.close());
  const trust = new TrustRegistry(store, { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))] });
  return { trust, authorizer: new IntentAuthorizer(trust, () => NOW) };
}

let n = 0;
/** An EVM transfer from the group key's own address (path m), signed by `by`. */
function request(by: Signer, over: Partial<SignRequestView> = {}, fieldsOver: Partial<EvmTransferIntent> = {}): SignRequestView & { intentBytes: Uint8Array } {
  const from = publicKeyToAddress(viemHex(secp256k1.getPublicKey(groupSecret, false)));
  const fields: EvmTransferIntent = {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: 1n, nonce: 0n, from: hexToBytes(from.slice(2)), to: new Uint8Array(20).fill(0xb0),
    asset: { kind: 'native' }, amount: 1000n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `k-${++n}`, notAfter: BigInt(NOW / 1000 + 600), ...fieldsOver,
  };
  const intent = encodeIntent(fields);
  const template = { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 1n };
  return {
    path: [], scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(fields, template))],
    intent, intentSignature: signIntent(intent, by.secret), apiKeyId: by.keyId,
    template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: String(10n ** 9n), maxPriorityFeePerGas: '1' }),
    endUserToken: '', owner: ORG, groupKey, chainCode: '00'.repeat(32), intentBytes: intent, ...over,
  };
}

const log = (...entries: Uint8Array[]) => entries;
const refusal = (code: string) => ({ constructor: SessionRefused, code });

t.test('a key registered through the carried log signs; after its revocation it is refused, even when a later log omits it', async (t) => {
  const { authorizer } = await setup(t);
  await t.rejects(authorizer.authorize(request(second)), refusal('unknown_api_key'), 'unknown before the log');
  await authorizer.authorize(request(second, { trustLog: log(bootstrap, add) }));
  // Remembered: the next signature needs no log.
  await authorizer.authorize(request(second));
  const revoke = signedEntry(first, 'POST', `/v1/api-keys/${second.keyId}/revoke`);
  await t.rejects(authorizer.authorize(request(second, { trustLog: log(bootstrap, add, revoke) })), refusal('unknown_api_key'));
  await t.rejects(authorizer.authorize(request(second, { trustLog: log(bootstrap, add) })), refusal('unknown_api_key'), 'omitted revocation');
  await authorizer.authorize(request(first, { trustLog: log(bootstrap, add) }));
});

t.test('a log that does not verify refuses the signature with bad_trust_log', async (t) => {
  const { authorizer } = await setup(t);
  const forged = signBootstrap(ORG, second.publicKey, 1, seed('not an operator'));
  await t.rejects(authorizer.authorize(request(second, { trustLog: log(forged) })), refusal('bad_trust_log'));
  await t.rejects(authorizer.authorize(request(first, { trustLog: [new Uint8Array([0xff])] })), refusal('bad_trust_log'), 'a malformed entry');
  await t.rejects(authorizer.authorize(request(first, { trustLog: [new Uint8Array()] })), refusal('bad_trust_log'), 'an empty entry');
  await t.rejects(authorizer.authorize(request(first, { trustLog: ['aa'] as unknown as Uint8Array[] })), refusal('bad_trust_log'), 'hex is not an entry');
  await t.rejects(authorizer.authorize(request(first, { trustLog: 'aa' as unknown as Uint8Array[] })), refusal('bad_trust_log'));
});

t.test('a hosted key bound to an end user signs only with that user\'s token for this intent', async (t) => {
  const { trust, authorizer } = await setup(t);
  const idp = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256' };
  const config = signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [jwk] }, audience: 'custody-test' });
  await trust.apply(ORG, [bootstrap, config]);
  const now = Math.floor(NOW / 1000);
  const token = (intent: Uint8Array, o: { sub?: string; aud?: string; iat?: number; exp?: number; claim?: string; key?: Awaited<ReturnType<typeof generateKeyPair>>['privateKey']; alg?: string } = {}) =>
    new SignJWT({ intent_sha256: o.claim ?? bytesToHex(sha256(intent)) }).setProtectedHeader({ alg: o.alg ?? 'ES256', kid: 'idp-1' }).setSubject(o.sub ?? 'user-42')
      .setAudience(o.aud ?? 'custody-test').setIssuedAt(o.iat ?? now - 10).setExpirationTime(o.exp ?? now + 290).sign(o.key ?? idp.privateKey);
  const endUser = { required: true, subject: 'user-42' };
  const r = () => request(first, { endUser });

  const ok = r();
  await authorizer.authorize({ ...ok, endUserToken: await token(ok.intentBytes) });
  await t.rejects(authorizer.authorize(r()), refusal('end_user_token_required'));
  const a = r();
  await t.rejects(authorizer.authorize({ ...a, endUserToken: await token(a.intentBytes, { sub: 'user-99' }) }), refusal('wrong_end_user'));
  const b = r();
  await t.rejects(authorizer.authorize({ ...b, endUserToken: await token(r().intentBytes) }), refusal('token_intent_mismatch'), 'a token for another intent');
  const bad = async (o: Parameters<typeof token>[1], what: string) => {
    const x = r();
    await t.rejects(authorizer.authorize({ ...x, endUserToken: await token(x.intentBytes, o) }), refusal('bad_end_user_token'), what);
  };
  await bad({ aud: 'other' }, 'another audience');
  await bad({ iat: now - 1000, exp: now - 31 }, 'expired beyond the skew');
  await bad({ iat: now - 10, exp: now + 900 }, 'a lifetime over 900 s');
  await bad({ key: (await generateKeyPair('ES256')).privateKey }, 'signed by a key outside the JWKS');
  const hs = new TextEncoder().encode('a shared secret of at least 32 bytes!!');
  const c = r();
  const hsToken = await new SignJWT({ intent_sha256: bytesToHex(sha256(c.intentBytes)) }).setProtectedHeader({ alg: 'HS256', kid: 'idp-1' }).setSubject('user-42')
    .setAudience('custody-test').setIssuedAt(now).setExpirationTime(now + 60).sign(hs);
  await t.rejects(authorizer.authorize({ ...c, endUserToken: hsToken }), refusal('bad_end_user_token'), 'HS256 is not allowed');
  const d = r();
  await t.rejects(authorizer.authorize({ ...d, endUserToken: 'not.a.jwt' }), refusal('bad_end_user_token'));
  // Within the 30 s skew an expired token still verifies.
  const e = r();
  await authorizer.authorize({ ...e, endUserToken: await token(e.intentBytes, { iat: now - 300, exp: now - 20 }) });
  // No bound subject: any end user of the organization, still for this intent only.
  const f = request(first, { endUser: { required: true } });
  await authorizer.authorize({ ...f, endUserToken: await token(f.intentBytes, { sub: 'someone' }) });
  // A key that does not require tokens ignores them.
  await authorizer.authorize(request(first, { endUser: { required: false, subject: 'user-42' } }));
});

t.test('a refusal never quotes the token', async (t) => {
  const { trust, authorizer } = await setup(t);
  const idp = await generateKeyPair('EdDSA');
  await trust.apply(ORG, [bootstrap, signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'x' }] }, audience: 'aud' })]);
  const x = request(first, { endUser: { required: true, subject: 'u' } });
  const tok = await new SignJWT({ intent_sha256: 'ff' }).setProtectedHeader({ alg: 'EdDSA', kid: 'x' }).setSubject('u').setAudience('aud').setIssuedAt().setExpirationTime('1m').sign(idp.privateKey);
  const err = await authorizer.authorize({ ...x, endUserToken: tok }).catch((e: Error) => e);
  t.ok(err instanceof SessionRefused);
  t.notOk((err as Error).message.includes(tok.split('.')[2]!), 'no token in the message');
});

t.test('an intent must expire, within a day: no not_after, or one further ahead, is refused', async (t) => {
  const { authorizer, trust } = await setup(t);
  await trust.apply(ORG, [bootstrap]);
  const now = BigInt(NOW / 1000);
  await t.rejects(authorizer.authorize(request(first, {}, { notAfter: 0n })), refusal('intent_expiry_required'));
  await t.rejects(authorizer.authorize(request(first, {}, { notAfter: now + 24n * 3600n + 1n })), refusal('intent_expiry_too_far'));
  await t.rejects(authorizer.authorize(request(first, {}, { notAfter: now - 1n })), refusal('intent_expired'));
  const grant = await authorizer.authorize(request(first, {}, { notAfter: now + 24n * 3600n }));
  t.match(grant, { notAfter: now + 24n * 3600n, use: { chain: 'evm', chainId: 1n, nonce: 0 } }, 'a day ahead is allowed; the grant names the nonce');
  t.match(grant.intentHash, /^[0-9a-f]{64}$/);
});

t.test('a call on a token (policy-mint, NFT transfer: intent kind 1 with calldata) is signed only as the customer signed it', async (t) => {
  // docs/platform/tokenization.md "What the customer's signature bounds": a malicious API or coordinator that
  // asks for another amount, recipient, call, target or value, or re-encodes the intent, gets no signature.
  const { authorizer, trust } = await setup(t);
  await trust.apply(ORG, [bootstrap]);
  const token = new Uint8Array(20).fill(0x70);
  const mint = (to: string, amount: bigint) => hexToBytes(mintCalldata('erc20', { to: `0x${to.repeat(20)}`, amount }).slice(2));
  const signedCall = { to: token, amount: 0n, data: mint('b2', 600n) };
  const honest = request(first, {}, signedCall);
  const fields = decodeIntentOf(honest.intentBytes);
  const template = { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 1n };
  const digestOf = (over: Partial<EvmTransferIntent>) => [evmSigningDigest(evmTransaction({ ...fields, ...over }, template))];
  const others: [string, Partial<EvmTransferIntent>][] = [
    ['another amount', { data: mint('b2', 60_000n) }],
    ['another recipient', { data: mint('cc', 600n) }],
    ['another call', { data: hexToBytes('a9059cbb') }],
    ['another contract', { to: new Uint8Array(20).fill(0x71) }],
    ['a value', { amount: 1n }],
  ];
  for (const [what, over] of others) await t.rejects(authorizer.authorize({ ...honest, digests: digestOf(over) }), refusal('digest_mismatch'), `${what}: the digest is not the intent's`);
  // The intent itself altered, under the customer's signature of the original bytes.
  const altered = encodeIntent({ ...fields, data: mint('cc', 60_000n) });
  await t.rejects(authorizer.authorize({ ...honest, intent: altered, digests: [evmSigningDigest(evmTransaction(decodeIntentOf(altered), template))] }), refusal('bad_intent_signature'), 'altered calldata: the customer\'s signature does not cover it');
  t.match(await authorizer.authorize(honest), { use: { chain: 'evm', nonce: 0 } }, 'the call the customer signed is signed');
});

function decodeIntentOf(bytes: Uint8Array): EvmTransferIntent {
  return decodeIntent(bytes) as EvmTransferIntent;
}
