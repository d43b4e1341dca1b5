// Bad requests against every vault-API route, one row each: the status and code, the `{error, code}`
// body with a message that names the problem, the status inside the spec's set for the operation
// (../shared/spec/vault-api.md, "Status sets per operation"), and a byte-for-byte snapshot of the whole
// store before and after showing that the refused request changed nothing.
import t from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import type { Level } from 'level';
import type { Response } from 'light-my-request';
import { buildApp } from '../../../api/app.ts';
import { loadApiConfig } from '../../../api/config.ts';
import { createLogger } from '../../../common/logger.ts';
import { RecordStore } from '../../../api/store/record-store.ts';
import { VaultService } from '../../../api/vaults/vault-service.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { contentDigest } from '../../../core/http/content-digest.ts';
import { signRequest } from '../../../core/http/http-signature.ts';
import { intentSha256 } from '../../../core/auth/end-user-token.ts';
import { encodeIntent, signIntent, type Intent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import type { ApiCredentials } from '../../../api/sdk/request-signer.ts';
import type { Tier, VaultRecord, WalletRecord } from '../../../api/vaults/records.ts';
import type { Policy } from '../../../api/policy/policy.ts';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import { enrolSelfNode } from './enrolled-node.ts';
import { SMALL_ORDER_CANONICAL, SMALL_ORDER_NON_CANONICAL } from '../../vectors/ed25519-bad-keys.ts';

/** The spec's status set per operation; the operations it does not list use what docs/vault-api.md documents. */
const STATUS_SETS = {
  'POST /vaults': [400, 401, 429],
  'GET /vaults/{vaultId}': [400, 401, 404],
  'POST /vaults/{vaultId}/wallets': [400, 401, 404],
  'POST /vaults/{vaultId}/reshare': [400, 401, 404, 409],
  'GET /wallets/{walletId}': [400, 401, 404],
  'POST /transactions': [400, 401, 403, 404, 409],
  'GET /transactions/{txId}': [400, 401, 404],
  'PUT /config/end-user-auth': [400, 401],
  'POST /api-keys': [400, 401, 429],
  'GET /api-keys': [401],
  'POST /api-keys/{keyId}/revoke': [400, 401, 404, 409],
} as const;
type Operation = keyof typeof STATUS_SETS;

const HOST = 'api.test';
const utf8 = (s: string) => new TextEncoder().encode(s);
const newSecret = () => ed25519.utils.randomSecretKey();
const pubHex = (secret: Uint8Array) => bytesToHex(ed25519.getPublicKey(secret));

// The store and app are opened, and closed, by a test of its own, not at the top level: the file shares
// its process with others (test/support/units.ts).
t.test('bad requests against every vault-API route, on one app and store', async (t) => {
  // Fixture: two organizations, vaults in several states, wallets, accepted transactions.
  const dir = mkdtempSync(join(tmpdir(), 'bad-requests-'));
  const store = await RecordStore.open(dir);
  const vaults = new VaultService({ store, environment: 'sandbox', limits: { apiKeysPerOrg: 3, vaultsPerOrg: 4 } });
  // No worker: accepted transactions stay stored in `created`, and nothing moves behind a row's back.
  const transactions = new TransactionService({ vaults, hasBackend: () => true });
  const app = await buildApp({ config: loadApiConfig({ API_DATA_DIR: dir }), logger: createLogger('api', 'silent'), vaults, transactions });
  t.teardown(async () => {
    await app.close();
    await store.close();
  });

  const secretA = newSecret();
  const { org: orgA, key: keyA } = await vaults.createOrg('Acme', pubHex(secretA));
  const credsA: ApiCredentials = { keyId: keyA.id, secretKey: secretA };
  const secretB = newSecret();
  const { org: orgB, key: keyB } = await vaults.createOrg('Other', pubHex(secretB));
  const credsB: ApiCredentials = { keyId: keyB.id, secretKey: secretB };

  // Organization A: a revoked key and two more active ones, so it sits at its key quota (3 active).
  const secretRevoked = newSecret();
  const revokedKey = await vaults.registerKey(orgA.id, pubHex(secretRevoked), 'old');
  await vaults.revokeKey(orgA.id, revokedKey.id);
  const credsRevoked: ApiCredentials = { keyId: revokedKey.id, secretKey: secretRevoked };
  const secretA3 = newSecret();
  await vaults.registerKey(orgA.id, pubHex(secretA3), 'ci');
  await vaults.registerKey(orgA.id, pubHex(newSecret()), 'ops');

  // End-user authentication for A, registered before its hosted vault is created.
  const endUser = await generateKeyPair('ES256', { extractable: true });
  const endUserJwk = { ...(await exportJWK(endUser.publicKey)), kid: 'eu-1', alg: 'ES256' };
  const AUDIENCE = 'https://wallet.acme.test';
  await vaults.setEndUserAuth(orgA.id, { jwks: { keys: [endUserJwk] }, audience: AUDIENCE });

  // Self vaults seat an enrolled self node.
  await enrolSelfNode(vaults, orgA.id);
  await enrolSelfNode(vaults, orgB.id);

  async function activate(org: string, tier: Tier, extra: { policy?: Policy; end_user_subject?: string } = {}): Promise<VaultRecord> {
    const v = await vaults.createVault(org, { tier, ...extra });
    // Stand in for the key job: a group key and chain code as the cluster records them.
    const next: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) };
    await store.batch([vaults.vaultOp(next)]);
    return next;
  }

  const ALLOWED = '0x00000000000000000000000000000000000000A1';
  const DENIED = '0x00000000000000000000000000000000000000d0';
  const STRANGER = '0x00000000000000000000000000000000000000e5';
  const TOKEN_OK = '0x1111111111111111111111111111111111111111';
  const TOKEN_BAD = '0x2222222222222222222222222222222222222222';
  const policy: Policy = {
    per_transaction_cap: { 'evm-local:native': '1000' },
    rolling_window: { seconds: 3600, caps: { 'evm-local:native': '1500' } },
    // DENIED is on both lists: the deny list wins.
    recipient_allowlist: [ALLOWED, DENIED],
    recipient_denylist: [DENIED],
    asset_allowlist: ['evm-local:native', `evm-local:${TOKEN_OK}`],
  };
  const vaultA = await activate(orgA.id, 'self', { policy });
  const hostedA = await activate(orgA.id, 'hosted', { end_user_subject: 'user-1' });
  const frozenA = await activate(orgA.id, 'self');
  const creatingA = await vaults.createVault(orgA.id, { tier: 'self' }); // at the quota of 4 now
  const vaultB = await activate(orgB.id, 'self');

  const wallet = async (org: string, vaultId: string, chain: string, account = 0): Promise<WalletRecord> => (await vaults.createWallet(org, vaultId, chain, account, undefined)).wallet;
  const walletA = await wallet(orgA.id, vaultA.id, 'evm-local');
  const walletA1 = await wallet(orgA.id, vaultA.id, 'evm-local', 1);
  const btcA = await wallet(orgA.id, vaultA.id, 'bitcoin-regtest');
  const hostedWallet = await wallet(orgA.id, hostedA.id, 'evm-local');
  const frozenWallet = await wallet(orgA.id, frozenA.id, 'evm-local');
  await vaults.freeze(frozenA.id, true);
  const walletB = await wallet(orgB.id, vaultB.id, 'evm-local');

  /** Intents expire an hour from now unless a case says otherwise. */
  const NOT_AFTER = BigInt(Math.floor(Date.now() / 1000) + 3600);

  interface EvmSpec {
    wallet: WalletRecord;
    org?: string;
    walletId?: string;
    chainId?: bigint;
    to?: string;
    amount?: bigint;
    asset?: string;
    key: string;
    notAfter?: bigint;
  }
  /** One nonce per idempotency key, as POST /v1/transactions/prepare reserves them: the same spec, the same bytes. */
  const nonces = new Map<string, bigint>();
  const nonceOf = (key: string) => nonces.get(key) ?? nonces.set(key, BigInt(nonces.size)).get(key)!;
  function evmIntent(s: EvmSpec): Uint8Array {
    const intent: Intent = evmIntentFromFields({
      organization: s.org ?? s.wallet.org, walletId: s.walletId ?? s.wallet.id, chainId: s.chainId ?? 31337n, nonce: nonceOf(s.key), from: s.wallet.address, to: s.to ?? ALLOWED,
      amount: String(s.amount ?? 1n), asset: s.asset, idempotencyKey: s.key, notAfter: s.notAfter ?? NOT_AFTER,
    });
    return encodeIntent(intent);
  }
  /** A POST /transactions body carrying a full intent, signed by `secret` (A's key unless given). */
  function submission(s: EvmSpec, secret = secretA, extra: Record<string, unknown> = {}) {
    const bytes = evmIntent(s);
    return { wallet_id: s.wallet.id, intent: bytesToHex(bytes), idempotency_key: s.key, intent_signature: bytesToHex(signIntent(bytes, secret)), ...extra };
  }

  // Accepted transactions: one of A's that counts in its rolling window, and one of B's.
  const prior = await transactions.submit(orgA.id, keyA.id, submission({ wallet: walletA, amount: 900n, key: 'prior-1' }));
  const txB = await transactions.submit(orgB.id, keyB.id, submission({ wallet: walletB, key: 'b-1' }, secretB));

  async function endUserToken(claims: { sub?: string; intent?: Uint8Array; aud?: string }, key = endUser.privateKey, kid = 'eu-1'): Promise<string> {
    return new SignJWT({ intent_sha256: intentSha256(claims.intent ?? new Uint8Array(1)) })
      .setProtectedHeader({ alg: 'ES256', kid })
      .setSubject(claims.sub ?? 'user-1')
      .setAudience(claims.aud ?? AUDIENCE)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(key);
  }

  // Signed requests, with every knob a broken client (or an attacker) could turn.
  interface SignKnobs {
    creds?: ApiCredentials;
    /** Method and URL the signature covers, when they differ from the request's. */
    method?: string;
    url?: string;
    /** Body the digest and signature were made over, when it differs from the one sent. */
    signedBody?: string;
    created?: number;
    /** expires - created, seconds (60 unless given). */
    lifetime?: number;
    nonce?: string | null;
    components?: string[];
    /** Digest header of the sent body recomputed after signing. */
    redigest?: boolean;
    drop?: string[];
    contentType?: string;
    edit?: (h: Record<string, string>) => void;
  }
  const nowS = () => Math.floor(Date.now() / 1000);
  function signed(method: string, path: string, payload: string | undefined, k: SignKnobs = {}): Record<string, string> {
    const creds = k.creds ?? credsA;
    const body = k.signedBody ?? payload;
    const h: Record<string, string> = { host: HOST };
    if (payload !== undefined) h['content-type'] = k.contentType ?? 'application/json';
    if (body !== undefined && body.length > 0) h['content-digest'] = contentDigest(utf8(body));
    const components = k.components ?? ['@method', '@target-uri', ...(h['content-digest'] ? ['content-digest'] : [])];
    const created = k.created ?? nowS();
    const sig = signRequest({ method: k.method ?? method, url: k.url ?? `http://${HOST}${path}`, headers: h }, {
      keyId: creds.keyId, secretKey: creds.secretKey, components, created, expires: created + (k.lifetime ?? 60),
      ...(k.nonce === null ? {} : { nonce: k.nonce ?? randomBytes(16).toString('hex') }),
    });
    const out: Record<string, string> = { ...h, ...sig };
    if (k.redigest && payload !== undefined) out['content-digest'] = contentDigest(utf8(payload));
    for (const name of k.drop ?? []) delete out[name];
    k.edit?.(out);
    return out;
  }

  type Method = 'GET' | 'POST' | 'PUT';
  interface Row {
    name: string;
    op: Operation;
    method: Method;
    path: string;
    /** JSON body; a string is sent as the raw bytes. */
    body?: unknown;
    /** Builds the body when it needs async work (tokens). */
    makeBody?: () => Promise<unknown>;
    sign?: SignKnobs;
    /** Replaces the signed headers altogether. */
    headers?: (payload: string | undefined) => Record<string, string>;
    /** Runs before the snapshot (a first, accepted request for the replay row). */
    before?: () => Promise<Record<string, string>>;
    status: number;
    code: string;
    message: RegExp;
  }

  const tx = (body: Record<string, unknown>) => ({ wallet_id: walletA.id, to: ALLOWED, amount: '1', idempotency_key: 'k-' + randomBytes(6).toString('hex'), intent_signature: 'ab'.repeat(64), ...body });
  const goodVaultBody = { tier: 'self', name: 'would be created' };
  const policyRow = (name: string, p: unknown, message: RegExp): Row => ({ name: `POST /vaults: policy ${name}`, op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', policy: p }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message });
  const jwksRow = (name: string, body: unknown, message: RegExp): Row => ({ name: `PUT /config/end-user-auth: ${name}`, op: 'PUT /config/end-user-auth', method: 'PUT', path: '/v1/config/end-user-auth', body, sign: { creds: credsB }, status: 400, code: 'invalid_request', message });
  const replayHeaders: { h?: Record<string, string> } = {};

  const rows: Row[] = [
    // Request authentication (docs/request-signing.md): 401 unauthorized, whatever the route. B's key
    // is under its vault quota, so an accepted request would have created a vault.
    { name: 'auth: no signature', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, drop: ['signature', 'signature-input'] }, status: 401, code: 'unauthorized', message: /no Signature/ },
    { name: 'auth: no signature and a bad body is still 401', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'cold' }, sign: { creds: credsB, drop: ['signature', 'signature-input'] }, status: 401, code: 'unauthorized', message: /no Signature/ },
    { name: 'auth: malformed Signature-Input', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, edit: (h) => { h['signature-input'] = 'sig=("@method" "@target-uri";created=x'; } }, status: 401, code: 'unauthorized', message: /structured dictionary/ },
    { name: 'auth: two signatures', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { edit: (h) => { h['signature-input'] += ', sig2=("@method");created=1'; } }, status: 401, code: 'unauthorized', message: /exactly one signature/ },
    { name: 'auth: unknown key id', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: { ...credsB, keyId: 'key_nope' } }, status: 401, code: 'unauthorized', message: /unknown or revoked key/ },
    { name: 'auth: revoked key', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { creds: credsRevoked }, status: 401, code: 'unauthorized', message: /unknown or revoked key/ },
    { name: 'auth: signed with another secret', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: { ...credsB, secretKey: newSecret() } }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: key id of another organization', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: { ...credsA, keyId: keyB.id } }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: body changed after signing (digest mismatch)', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'hosted' }, sign: { creds: credsB, signedBody: JSON.stringify(goodVaultBody) }, status: 401, code: 'unauthorized', message: /Content-Digest does not match/ },
    { name: 'auth: body and its digest changed after signing', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'hosted' }, sign: { creds: credsB, signedBody: JSON.stringify(goodVaultBody), redigest: true }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: body without Content-Digest', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, drop: ['content-digest'] }, status: 401, code: 'unauthorized', message: /needs a Content-Digest/ },
    { name: 'auth: Content-Digest of an unknown algorithm only', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, edit: (h) => { h['content-digest'] = 'md5=:AAAAAAAAAAAAAAAAAAAAAA==:'; } }, status: 401, code: 'unauthorized', message: /signature does not verify/ },
    { name: 'auth: signature does not cover content-digest', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, components: ['@method', '@target-uri'] }, status: 401, code: 'unauthorized', message: /must cover content-digest/ },
    { name: 'auth: signature does not cover @target-uri', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { components: ['@method'] }, status: 401, code: 'unauthorized', message: /must cover @target-uri/ },
    { name: 'auth: expired 1 s ago (no skew after expires)', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, created: nowS() - 61, lifetime: 60 }, status: 401, code: 'unauthorized', message: /signature expired/ },
    { name: 'auth: stale created', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, created: nowS() - 3600 }, status: 401, code: 'unauthorized', message: /expired/ },
    { name: 'auth: created in the future', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { created: nowS() + 600 }, status: 401, code: 'unauthorized', message: /in the future/ },
    { name: 'auth: expires too far after created', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, lifetime: 301 }, status: 401, code: 'unauthorized', message: /300 s at most/ },
    { name: 'auth: missing nonce', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, nonce: null }, status: 401, code: 'unauthorized', message: /nonce is required/ },
    { name: 'auth: missing expires', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { edit: (h) => { h['signature-input'] = h['signature-input']!.replace(/;expires=\d+/, ''); } }, status: 401, code: 'unauthorized', message: /expires is required/ },
    { name: 'auth: missing created', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { edit: (h) => { h['signature-input'] = h['signature-input']!.replace(/;created=\d+/, ''); } }, status: 401, code: 'unauthorized', message: /created is required/ },
    { name: 'auth: nonce too short', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { nonce: 'short' }, status: 401, code: 'unauthorized', message: /nonce must be/ },
    {
      name: 'auth: replayed nonce', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys',
      before: async () => {
        replayHeaders.h = signed('GET', '/v1/api-keys', undefined);
        const first = await app.inject({ method: 'GET', url: '/v1/api-keys', headers: replayHeaders.h });
        if (first.statusCode !== 200) throw new Error(`the first request was refused: ${first.body}`);
        return replayHeaders.h;
      },
      headers: () => replayHeaders.h!, status: 401, code: 'unauthorized', message: /nonce was already used/,
    },
    { name: 'auth: signed for another @target-uri (path)', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, url: `http://${HOST}/v1/api-keys` }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: signed for another @target-uri (host)', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { url: 'http://evil.test/v1/api-keys' }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: signed for another method', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, sign: { creds: credsB, method: 'PUT' }, status: 401, code: 'unauthorized', message: /does not verify/ },
    { name: 'auth: another algorithm', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { edit: (h) => { h['signature-input'] = h['signature-input']!.replace('alg="ed25519"', 'alg="hmac-sha256"'); } }, status: 401, code: 'unauthorized', message: /only ed25519/ },
    { name: 'auth: signature of the wrong length', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({}), sign: { edit: (h) => { h['signature'] = 'sig=:AAAA:'; } }, status: 401, code: 'unauthorized', message: /does not verify/ },

    // POST /vaults.
    { name: 'POST /vaults: no tier', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { name: 'x' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /tier/ },
    { name: 'POST /vaults: unknown tier', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'cold' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /tier/ },
    { name: 'POST /vaults: unknown field', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', colour: 'red' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /Unexpected property/ },
    { name: 'POST /vaults: empty name', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', name: '' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /name/ },
    { name: 'POST /vaults: name not a string', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', name: 7 }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /name/ },
    { name: 'POST /vaults: end-user subject on a self vault', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', end_user_subject: 'u' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /hosted vaults only/ },
    { name: 'POST /vaults: body not JSON', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: '{"tier": "self"', sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /not valid JSON/ },
    { name: 'POST /vaults: body not sent as JSON', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: 'tier=self', sign: { creds: credsB, contentType: 'application/x-www-form-urlencoded' }, status: 400, code: 'invalid_request', message: /Content-Type/i },
    { name: 'POST /vaults: body over the size limit', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', name: 'x'.repeat(1_100_000) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /too large|body/i },
    { name: 'POST /vaults: empty end-user subject', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'hosted', end_user_subject: '' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /end_user_subject/ },
    { name: 'POST /vaults: no body', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /body: Expected object/ },
    policyRow('with an unknown rule', { max_daily: '5' }, /Unexpected property/),
    policyRow('cap keyed by a malformed asset', { per_transaction_cap: { 'ETH': '5' } }, /per_transaction_cap/),
    policyRow('cap not a base-10 integer', { per_transaction_cap: { 'evm-local:native': '1e18' } }, /per_transaction_cap/),
    policyRow('cap negative', { per_transaction_cap: { 'evm-local:native': '-1' } }, /per_transaction_cap/),
    policyRow('window shorter than a minute', { rolling_window: { seconds: 59, caps: {} } }, /seconds/),
    policyRow('window without caps', { rolling_window: { seconds: 3600 } }, /caps/),
    policyRow('allow list with a duplicate', { recipient_allowlist: [ALLOWED, ALLOWED] }, /duplicate|recipient_allowlist/),
    policyRow('deny list not an array', { recipient_denylist: DENIED }, /recipient_denylist/),
    policyRow('asset allow list with a bad asset', { asset_allowlist: ['evm-local:0x12'] }, /asset_allowlist/),
    policyRow('not an object', 'strict', /policy/),
    { name: 'POST /vaults: customer node key of small order', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: { tier: 'self', customer_node: { node_id: nodeIdFor(Buffer.from(SMALL_ORDER_CANONICAL[1]!, 'hex')), signing_key: SMALL_ORDER_CANONICAL[1], encryption_key: '09' + '00'.repeat(31) } }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /customer_node\.signing_key is not a valid Ed25519 public key/ },
    { name: 'POST /vaults: vault quota', op: 'POST /vaults', method: 'POST', path: '/v1/vaults', body: goodVaultBody, status: 429, code: 'rate_limited', message: /vault quota reached \(4\)/ },

    // GET /vaults/{vaultId}.
    { name: 'GET /vaults/{id}: another organization\'s vault', op: 'GET /vaults/{vaultId}', method: 'GET', path: `/v1/vaults/${vaultB.id}`, status: 404, code: 'not_found', message: /no such vault/ },
    { name: 'GET /vaults/{id}: id too long', op: 'GET /vaults/{vaultId}', method: 'GET', path: `/v1/vaults/${'v'.repeat(65)}`, status: 400, code: 'invalid_request', message: /vaultId/ },

    // POST /vaults/{vaultId}/wallets.
    { name: 'wallets: no chain', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { account_index: 2 }, status: 400, code: 'invalid_request', message: /chain/ },
    { name: 'wallets: unknown chain', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'dogecoin' }, status: 400, code: 'invalid_request', message: /chain/ },
    { name: 'wallets: mainnet in the sandbox', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'ethereum' }, status: 400, code: 'invalid_request', message: /not served in sandbox/ },
    { name: 'wallets: negative account', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'evm-local', account_index: -1 }, status: 400, code: 'invalid_request', message: /account_index/ },
    { name: 'wallets: hardened account', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'evm-local', account_index: 2 ** 31 }, status: 400, code: 'invalid_request', message: /account_index/ },
    { name: 'wallets: fractional account', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'evm-local', account_index: 1.5 }, status: 400, code: 'invalid_request', message: /account_index/ },
    { name: 'wallets: address type on an EVM chain', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'evm-local', address_type: 'p2tr' }, status: 400, code: 'invalid_request', message: /Bitcoin chains only/ },
    { name: 'wallets: unknown address type', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'bitcoin-regtest', address_type: 'p2pkh' }, status: 400, code: 'invalid_request', message: /address_type/ },
    { name: 'wallets: unknown field', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultA.id}/wallets`, body: { chain: 'evm-local', label: 'x' }, status: 400, code: 'invalid_request', message: /Unexpected property/ },
    { name: 'wallets: vault without a key yet', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${creatingA.id}/wallets`, body: { chain: 'evm-local' }, status: 400, code: 'invalid_request', message: /not generated yet/ },
    { name: 'wallets: another organization\'s vault', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: `/v1/vaults/${vaultB.id}/wallets`, body: { chain: 'evm-local', account_index: 5 }, status: 404, code: 'not_found', message: /no such vault/ },
    { name: 'wallets: no such vault', op: 'POST /vaults/{vaultId}/wallets', method: 'POST', path: '/v1/vaults/vlt_missing/wallets', body: { chain: 'evm-local' }, status: 404, code: 'not_found', message: /no such vault/ },

    // GET /wallets/{walletId}.
    { name: 'GET /wallets/{id}: another organization\'s wallet', op: 'GET /wallets/{walletId}', method: 'GET', path: `/v1/wallets/${walletB.id}`, status: 404, code: 'not_found', message: /no such wallet/ },
    { name: 'GET /wallets/{id}: no such wallet', op: 'GET /wallets/{walletId}', method: 'GET', path: '/v1/wallets/wal_missing', status: 404, code: 'not_found', message: /no such wallet/ },
    { name: 'GET /wallets/{id}: unsigned', op: 'GET /wallets/{walletId}', method: 'GET', path: `/v1/wallets/${walletA.id}`, sign: { drop: ['signature', 'signature-input'] }, status: 401, code: 'unauthorized', message: /no Signature/ },

    // POST /vaults/{vaultId}/reshare.
    { name: 'reshare: unknown target tier', op: 'POST /vaults/{vaultId}/reshare', method: 'POST', path: `/v1/vaults/${vaultA.id}/reshare`, body: { target_tier: 'cold' }, status: 400, code: 'invalid_request', message: /target_tier/ },
    { name: 'reshare: unknown field', op: 'POST /vaults/{vaultId}/reshare', method: 'POST', path: `/v1/vaults/${vaultA.id}/reshare`, body: { threshold: 3 }, status: 400, code: 'invalid_request', message: /Unexpected property/ },
    { name: 'reshare: while creating', op: 'POST /vaults/{vaultId}/reshare', method: 'POST', path: `/v1/vaults/${creatingA.id}/reshare`, body: {}, status: 409, code: 'conflict', message: /the vault is creating; a reshare needs it active/ },
    { name: 'reshare: while frozen', op: 'POST /vaults/{vaultId}/reshare', method: 'POST', path: `/v1/vaults/${frozenA.id}/reshare`, body: { target_tier: 'hosted' }, status: 409, code: 'conflict', message: /the vault is frozen/ },
    { name: 'reshare: another organization\'s vault', op: 'POST /vaults/{vaultId}/reshare', method: 'POST', path: `/v1/vaults/${vaultB.id}/reshare`, body: {}, status: 404, code: 'not_found', message: /no such vault/ },

    // POST /transactions: the body's form.
    { name: 'tx: amount not base-10 (exponent)', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ amount: '1e18' }), status: 400, code: 'invalid_request', message: /amount/ },
    { name: 'tx: amount not base-10 (hex)', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ amount: '0x10' }), status: 400, code: 'invalid_request', message: /amount/ },
    { name: 'tx: amount with a leading zero', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ amount: '01' }), status: 400, code: 'invalid_request', message: /amount/ },
    { name: 'tx: amount a JSON number', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ amount: 5 }), status: 400, code: 'invalid_request', message: /amount/ },
    { name: 'tx: unknown field', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ memo: 'hi' }), status: 400, code: 'invalid_request', message: /Unexpected property/ },
    { name: 'tx: no wallet_id', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (({ wallet_id: _w, ...rest }) => rest)(tx({})), status: 400, code: 'invalid_request', message: /wallet_id/ },
    { name: 'tx: no idempotency_key', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (({ idempotency_key: _k, ...rest }) => rest)(tx({})), status: 400, code: 'invalid_request', message: /idempotency_key/ },
    { name: 'tx: idempotency_key with a space', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ idempotency_key: 'a b' }), status: 400, code: 'invalid_request', message: /idempotency_key/ },
    { name: 'tx: no intent_signature', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (({ intent_signature: _s, ...rest }) => rest)(tx({})), status: 400, code: 'invalid_request', message: /intent_signature/ },
    { name: 'tx: intent_signature too short', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ intent_signature: 'ab'.repeat(32) }), status: 400, code: 'invalid_request', message: /intent_signature/ },
    { name: 'tx: recipient not an address', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ to: '0x1234' }), status: 400, code: 'invalid_request', message: /^to: / },
    { name: 'tx: asset neither native nor a contract', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ asset: 'usdc' }), status: 400, code: 'invalid_request', message: /asset/ },
    { name: 'tx: max_fee negative', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ max_fee: '-1' }), status: 400, code: 'invalid_request', message: /max_fee/ },
    { name: 'tx: max_fee zero', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ max_fee: '0' }), status: 400, code: 'invalid_request', message: /max_fee must be positive/ },
    { name: 'tx: intent not hex', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: { ...submission({ wallet: walletA, key: 'hex-1' }), intent: 'zz'.repeat(40) }, status: 400, code: 'invalid_request', message: /intent/ },
    { name: 'tx: intent of odd length', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: { ...submission({ wallet: walletA, key: 'hex-2' }), intent: 'abc'.repeat(20) }, status: 400, code: 'invalid_request', message: /intent/ },
    { name: 'tx: hex that is not an intent', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: { ...submission({ wallet: walletA, key: 'hex-3' }), intent: '00'.repeat(40) }, status: 400, code: 'invalid_request', message: /intent: not an intent/ },
    { name: 'tx: intent with trailing bytes', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (() => { const s = submission({ wallet: walletA, key: 'trail-1' }); return { ...s, intent: s.intent + '00' }; })(), status: 400, code: 'invalid_request', message: /intent: / },
    { name: 'tx: neither intent nor to and amount', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (({ to: _t, ...rest }) => rest)(tx({})), status: 400, code: 'invalid_request', message: /either `intent`, or `to` and `amount`/ },
    { name: 'tx: convenience fields for a Bitcoin wallet', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ wallet_id: btcA.id }), status: 400, code: 'invalid_request', message: /Bitcoin transaction needs `intent`/ },
    { name: 'tx: empty end-user token', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: hostedWallet, key: 'eut-0' }, secretA, { end_user_token: '' }), status: 400, code: 'invalid_request', message: /end_user_token/ },
    { name: 'tx: end-user token on a vault without end-user auth', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'eut-1' }, secretA, { end_user_token: 'x.y.z' }), status: 400, code: 'invalid_request', message: /end_user_token applies to hosted vaults/ },

    // POST /transactions: the intent's binding to the wallet, organization and chain.
    { name: 'tx: intent for another wallet', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: { ...submission({ wallet: walletA, walletId: walletA1.id, key: 'bind-1' }), wallet_id: walletA.id }, status: 400, code: 'invalid_request', message: /another wallet/ },
    { name: 'tx: intent for another organization', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, org: orgB.id, key: 'bind-2' }), status: 400, code: 'invalid_request', message: /another organization/ },
    { name: 'tx: intent for another chain', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, chainId: 11155111n, key: 'bind-3' }), status: 400, code: 'invalid_request', message: /chain id 11155111, the wallet is on evm-local/ },
    { name: 'tx: intent sending from another address', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: { ...walletA, address: walletA1.address }, key: 'bind-4' }), status: 400, code: 'invalid_request', message: /another address/ },
    {
      name: 'tx: Bitcoin intent for another network', op: 'POST /transactions', method: 'POST', path: '/v1/transactions',
      body: (() => {
        const bytes = encodeIntent({ kind: 'btc.transfer', organization: orgA.id, walletId: btcA.id, network: 'testnet', from: btcA.address, outputs: [{ address: btcA.address, amount: 1000n }], maxFeeRate: 10n, maxFee: 5000n, inputs: [], idempotencyKey: 'btc-1', notAfter: 0n });
        return { wallet_id: btcA.id, intent: bytesToHex(bytes), idempotency_key: 'btc-1', intent_signature: bytesToHex(signIntent(bytes, secretA)) };
      })(),
      status: 400, code: 'invalid_request', message: /bitcoin testnet, the wallet is on bitcoin-regtest/,
    },
    { name: 'tx: idempotency_key differs from the intent\'s', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: { ...submission({ wallet: walletA, key: 'inner-1' }), idempotency_key: 'outer-1' }, status: 400, code: 'invalid_request', message: /idempotency_key differs/ },
    { name: 'tx: another organization\'s wallet', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletB, org: orgA.id, key: 'own-1' }), status: 404, code: 'not_found', message: /no such wallet/ },
    { name: 'tx: no such wallet', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ wallet_id: 'wal_missing' }), status: 404, code: 'not_found', message: /no such wallet/ },

    // POST /transactions: signatures, tokens, policy and state.
    { name: 'tx: intent signature by a key of another organization', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'sig-1' }, secretB), status: 403, code: 'forbidden', message: /intent signature did not verify/ },
    { name: 'tx: intent signature by a revoked key', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'sig-2' }, secretRevoked), status: 403, code: 'forbidden', message: /intent signature did not verify/ },
    { name: 'tx: convenience fields with a signature over other fields', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (() => { const s = submission({ wallet: walletA, amount: 5n, key: 'sig-3' }); return { wallet_id: walletA.id, to: ALLOWED, amount: '6', not_after: Number(NOT_AFTER), nonce: Number(nonceOf('sig-3')), idempotency_key: 'sig-3', intent_signature: s.intent_signature }; })(), status: 403, code: 'forbidden', message: /intent signature did not verify/ },
    { name: 'tx: intent without not_after', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'exp-2', notAfter: 0n }), status: 400, code: 'invalid_request', message: /needs a not_after/ },
    { name: 'tx: intent expiring more than a day ahead', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'exp-3', notAfter: BigInt(nowS() + 24 * 3600 + 120) }), status: 400, code: 'invalid_request', message: /more than 24 hours ahead/ },
    { name: 'tx: convenience fields without not_after', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (() => { const s = submission({ wallet: walletA, key: 'exp-4', notAfter: 0n }); return { wallet_id: walletA.id, to: ALLOWED, amount: '1', nonce: Number(nonceOf('exp-4')), idempotency_key: 'exp-4', intent_signature: s.intent_signature }; })(), status: 400, code: 'invalid_request', message: /needs a not_after/ },
    { name: 'tx: convenience fields without nonce', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: (() => { const s = submission({ wallet: walletA, key: 'nonce-1' }); return { wallet_id: walletA.id, to: ALLOWED, amount: '1', not_after: Number(NOT_AFTER), idempotency_key: 'nonce-1', intent_signature: s.intent_signature }; })(), status: 400, code: 'invalid_request', message: /names no nonce/ },
    { name: 'tx: not_after not an integer', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: tx({ not_after: '1795000000' }), status: 400, code: 'invalid_request', message: /not_after/ },
    {
      name: 'tx: P2WPKH intent without input amounts', op: 'POST /transactions', method: 'POST', path: '/v1/transactions',
      body: (() => {
        const bytes = encodeIntent({ kind: 'btc.transfer', organization: orgA.id, walletId: btcA.id, network: 'regtest', from: btcA.address, outputs: [{ address: btcA.address, amount: 1000n }], maxFeeRate: 10n, maxFee: 5000n, inputs: [{ txid: new Uint8Array(32).fill(1), vout: 0 }], idempotencyKey: 'btc-2', notAfter: NOT_AFTER });
        return { wallet_id: btcA.id, intent: bytesToHex(bytes), idempotency_key: 'btc-2', intent_signature: bytesToHex(signIntent(bytes, secretA)) };
      })(),
      status: 400, code: 'invalid_request', message: /names its inputs with their amounts/,
    },
    { name: 'tx: expired intent (not_after)', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, key: 'exp-1', notAfter: 1_000_000n }), status: 403, code: 'forbidden', message: /expired/ },
    { name: 'tx: per-transaction cap', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, amount: 1001n, key: 'cap-1' }), status: 403, code: 'cap_exceeded', message: /over the per-transaction cap of 1000/ },
    { name: 'tx: rolling-window limit', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, amount: 601n, key: 'win-1' }), status: 403, code: 'forbidden', message: /spend limit: 900 already spent of 1500 per 3600 s/ },
    { name: 'tx: denied recipient (deny wins over allow)', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, to: DENIED.toUpperCase().replace('0X', '0x'), key: 'deny-1' }), status: 403, code: 'forbidden', message: /is denied by the vault's policy/ },
    { name: 'tx: recipient not on the allow list', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, to: STRANGER, key: 'allow-1' }), status: 403, code: 'forbidden', message: /not on the vault's allow list/ },
    { name: 'tx: asset not allowed', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, asset: TOKEN_BAD, key: 'asset-1' }), status: 403, code: 'forbidden', message: /asset evm-local:0x2222222222222222222222222222222222222222 is not allowed/ },
    { name: 'tx: hosted vault without an end-user token', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: hostedWallet, key: 'eu-1' }), status: 403, code: 'forbidden', message: /needs an end-user token/ },
    { name: 'tx: hosted vault with a token signed by an unknown key', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', makeBody: async () => { const s = submission({ wallet: hostedWallet, key: 'eu-2' }); const other = await generateKeyPair('ES256'); return { ...s, end_user_token: await endUserToken({ intent: Buffer.from(s.intent, 'hex') }, other.privateKey) }; }, status: 403, code: 'forbidden', message: /end-user token does not verify/ },
    { name: 'tx: hosted vault with a token for another audience', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', makeBody: async () => { const s = submission({ wallet: hostedWallet, key: 'eu-3' }); return { ...s, end_user_token: await endUserToken({ intent: Buffer.from(s.intent, 'hex'), aud: 'https://other.test' }) }; }, status: 403, code: 'forbidden', message: /end-user token does not verify.*aud/ },
    { name: 'tx: hosted vault with a token for another end user', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', makeBody: async () => { const s = submission({ wallet: hostedWallet, key: 'eu-4' }); return { ...s, end_user_token: await endUserToken({ intent: Buffer.from(s.intent, 'hex'), sub: 'user-2' }) }; }, status: 403, code: 'forbidden', message: /another subject/ },
    { name: 'tx: hosted vault with a token for another intent', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', makeBody: async () => { const s = submission({ wallet: hostedWallet, key: 'eu-5' }); return { ...s, end_user_token: await endUserToken({ intent: evmIntent({ wallet: hostedWallet, key: 'eu-5', amount: 2n }) }) }; }, status: 403, code: 'forbidden', message: /authorizes another intent/ },
    {
      name: 'tx: hosted vault with a token issued in the future (it would outlive 900 s)', op: 'POST /transactions', method: 'POST', path: '/v1/transactions',
      makeBody: async () => {
        const s = submission({ wallet: hostedWallet, key: 'eu-7' });
        const iat = nowS() + 3600;
        const tok = await new SignJWT({ intent_sha256: intentSha256(Buffer.from(s.intent, 'hex')) }).setProtectedHeader({ alg: 'ES256', kid: 'eu-1' })
          .setSubject('user-1').setAudience(AUDIENCE).setIssuedAt(iat).setExpirationTime(iat + 600).sign(endUser.privateKey);
        return { ...s, end_user_token: tok };
      },
      status: 403, code: 'forbidden', message: /issued in the future/,
    },
    { name: 'tx: hosted vault with a token that is not a JWT', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: hostedWallet, key: 'eu-6' }, secretA, { end_user_token: 'not-a-jwt' }), status: 403, code: 'forbidden', message: /end-user token does not verify/ },
    { name: 'tx: frozen vault', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: frozenWallet, key: 'frz-1' }), status: 409, code: 'conflict', message: /the vault is frozen/ },
    { name: 'tx: reused idempotency key with another body', op: 'POST /transactions', method: 'POST', path: '/v1/transactions', body: submission({ wallet: walletA, amount: 5n, key: 'prior-1' }), status: 409, code: 'conflict', message: /idempotency_key was used for another transaction/ },

    // GET /transactions/{txId}.
    { name: 'GET /transactions/{id}: another organization\'s transaction', op: 'GET /transactions/{txId}', method: 'GET', path: `/v1/transactions/${txB.tx.id}`, status: 404, code: 'not_found', message: /no such transaction/ },
    { name: 'GET /transactions/{id}: no such transaction', op: 'GET /transactions/{txId}', method: 'GET', path: '/v1/transactions/txn_missing', status: 404, code: 'not_found', message: /no such transaction/ },
    { name: 'GET /transactions/{id}: id too long', op: 'GET /transactions/{txId}', method: 'GET', path: `/v1/transactions/${'t'.repeat(65)}`, status: 400, code: 'invalid_request', message: /txId/ },
    { name: 'GET /transactions/{id}: unsigned', op: 'GET /transactions/{txId}', method: 'GET', path: `/v1/transactions/${prior.tx.id}`, sign: { drop: ['signature', 'signature-input'] }, status: 401, code: 'unauthorized', message: /no Signature/ },

    // PUT /config/end-user-auth (B has none; an accepted request would register one).
    jwksRow('no audience', { jwks: { keys: [endUserJwk] } }, /audience/),
    jwksRow('empty audience', { jwks: { keys: [endUserJwk] }, audience: '' }, /audience/),
    jwksRow('no keys', { jwks: { keys: [] }, audience: AUDIENCE }, /keys/),
    jwksRow('jwks not a set', { jwks: [endUserJwk], audience: AUDIENCE }, /jwks/),
    jwksRow('unknown field', { jwks: { keys: [endUserJwk] }, audience: AUDIENCE, issuer: 'x' }, /Unexpected property/),
    jwksRow('private key material (EC d)', { jwks: { keys: [{ ...endUserJwk, d: 'AAAA' }] }, audience: AUDIENCE }, /private key material/),
    jwksRow('symmetric key (kty oct)', { jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, audience: AUDIENCE }, /private key material|kty/),
    jwksRow('bad kty', { jwks: { keys: [{ kty: 'DSA', y: 'AAAA' }] }, audience: AUDIENCE }, /kty must be EC, OKP or RSA/),
    jwksRow('HS256 alg', { jwks: { keys: [{ ...endUserJwk, alg: 'HS256' }] }, audience: AUDIENCE }, /alg HS256 is not accepted/),
    jwksRow('OKP Ed25519 key of small order', { jwks: { keys: [{ kty: 'OKP', crv: 'Ed25519', x: Buffer.from(SMALL_ORDER_CANONICAL[6]!, 'hex').toString('base64url') }] }, audience: AUDIENCE }, /not a valid Ed25519 public key/),
    jwksRow('EC point not on the curve', { jwks: { keys: [{ ...endUserJwk, x: Buffer.alloc(32, 1).toString('base64url') }] }, audience: AUDIENCE }, /not a usable ES256 key/),

    // POST /api-keys (A is at its quota of 3 active keys).
    { name: 'POST /api-keys: public key not hex', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: 'zz'.repeat(32) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /public_key/ },
    { name: 'POST /api-keys: public key of 31 bytes', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: 'ab'.repeat(31) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /public_key/ },
    { name: 'POST /api-keys: no public key', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { label: 'x' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /public_key/ },
    { name: 'POST /api-keys: empty label', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: pubHex(newSecret()), label: '' }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /label/ },
    { name: 'POST /api-keys: label over 120 characters', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: pubHex(newSecret()), label: 'l'.repeat(121) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /label/ },
    { name: 'POST /api-keys: unknown field (a private key)', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: pubHex(newSecret()), secret_key: 'ab'.repeat(32) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /Unexpected property/ },
    { name: 'POST /api-keys: public key already registered', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: pubHex(secretB).toUpperCase() }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /already registered/ },
    { name: 'POST /api-keys: a small-order point, at the quota: 400, not 429', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: SMALL_ORDER_CANONICAL[4] }, status: 400, code: 'invalid_request', message: /not a valid Ed25519 public key/ },
    { name: 'POST /api-keys: a non-canonical small-order encoding', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: SMALL_ORDER_NON_CANONICAL[0] }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /not a valid Ed25519 public key/ },
    { name: 'POST /api-keys: a point off the curve', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: '02' + '00'.repeat(31) }, sign: { creds: credsB }, status: 400, code: 'invalid_request', message: /not a valid Ed25519 public key/ },
    { name: 'POST /api-keys: key quota', op: 'POST /api-keys', method: 'POST', path: '/v1/api-keys', body: { public_key: pubHex(newSecret()) }, status: 429, code: 'rate_limited', message: /API key quota reached \(3 active keys\)/ },

    // POST /api-keys/{keyId}/revoke.
    { name: 'revoke: another organization\'s key', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: `/v1/api-keys/${keyB.id}/revoke`, status: 404, code: 'not_found', message: /no such API key/ },
    { name: 'revoke: key id too long', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: `/v1/api-keys/${'k'.repeat(65)}/revoke`, status: 400, code: 'invalid_request', message: /keyId/ },
    { name: 'revoke: no such key', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: '/v1/api-keys/key_missing/revoke', status: 404, code: 'not_found', message: /no such API key/ },
    { name: 'revoke: already revoked', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: `/v1/api-keys/${revokedKey.id}/revoke`, status: 409, code: 'conflict', message: /already revoked/ },
    { name: 'revoke: the last active key', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: `/v1/api-keys/${keyB.id}/revoke`, sign: { creds: credsB }, status: 409, code: 'conflict', message: /last active key/ },
    { name: 'revoke: signed by the revoked key', op: 'POST /api-keys/{keyId}/revoke', method: 'POST', path: `/v1/api-keys/${keyA.id}/revoke`, sign: { creds: credsRevoked }, status: 401, code: 'unauthorized', message: /unknown or revoked key/ },

    // GET /api-keys.
    { name: 'GET /api-keys: unsigned', op: 'GET /api-keys', method: 'GET', path: '/v1/api-keys', sign: { drop: ['signature', 'signature-input'] }, status: 401, code: 'unauthorized', message: /no Signature/ },
  ];

  /**
   * Every key and value in the LevelDB under the store: records and index entries alike, but for the
   * request nonces an authenticated request claims whatever its outcome (docs/security.md).
   */
  async function snapshot(): Promise<[string, string][]> {
    const db = (store as unknown as { db: Level<string, string> }).db;
    const out: [string, string][] = [];
    const nonces = ['r', 'i'].map((kind) => `${kind}\u0000request_nonces\u0000`);
    for await (const entry of db.iterator()) if (!nonces.some((p) => entry[0].startsWith(p))) out.push(entry);
    return out;
  }

  t.ok(rows.length >= 40, `${rows.length} rows`);
  t.same(new Set(rows.map((r) => r.name)).size, rows.length, 'row names are unique');

  for (const row of rows) {
    t.test(row.name, async (t) => {
      const body = row.makeBody ? await row.makeBody() : row.body;
      const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
      if (row.before) await row.before();
      const before = await snapshot();
      const headers = row.headers ? row.headers(payload) : signed(row.method, row.path, payload, row.sign);
      const res: Response = await app.inject({ method: row.method, url: row.path, headers, ...(payload !== undefined ? { payload } : {}) });
      const json = res.json() as { error: unknown; code: unknown };
      t.equal(res.statusCode, row.status, `status (${res.body})`);
      t.ok((STATUS_SETS[row.op] as readonly number[]).includes(res.statusCode), `${res.statusCode} is in the status set of ${row.op}`);
      // A schema violation also lists every rejected field (docs/platform/errors.md): one shape on both APIs.
      const fields = (json as { fields?: { field: string; reason: string }[] }).fields;
      t.same(Object.keys(json).sort(), fields ? ['code', 'error', 'fields', 'request_id'] : ['code', 'error', 'request_id'], 'the body is exactly {error, code, request_id} or {error, code, fields, request_id}');
      t.equal((json as { request_id?: unknown }).request_id, res.headers['x-request-id'], 'request_id is the X-Request-Id header\'s');
      if (fields) t.ok(fields.length > 0 && fields.every((f) => typeof json.error === 'string' && json.error.includes(`${f.field}: ${f.reason}`)), 'each listed field is in the message');
      t.equal(json.code, row.code, 'code');
      t.type(json.error, 'string');
      t.match(json.error, row.message, 'the message names the problem');
      t.same(await snapshot(), before, 'nothing changed in the store');
    });
  }

  t.test('the fixture itself was accepted: the rows are refusals of otherwise working routes', async (t) => {
    const list = await app.inject({ method: 'GET', url: '/v1/api-keys', headers: signed('GET', '/v1/api-keys', undefined) });
    t.equal(list.statusCode, 200);
    t.equal(list.json().api_keys.length, 4);
    const wal = await app.inject({ method: 'GET', url: `/v1/wallets/${walletA.id}`, headers: signed('GET', `/v1/wallets/${walletA.id}`, undefined) });
    t.equal(wal.statusCode, 200);
    t.same(wal.json(), (({ org: _o, ...w }) => ({ ...w, state: 'active', decommissioned_at: null }))(walletA), 'GET /v1/wallets/{id} shows the wallet without its organization, with its state');
    const own = await app.inject({ method: 'GET', url: `/v1/transactions/${prior.tx.id}`, headers: signed('GET', `/v1/transactions/${prior.tx.id}`, undefined) });
    t.equal(own.statusCode, 200);
    t.equal(own.json().state, 'created');
    const b = JSON.stringify({ tier: 'self' });
    const created = await app.inject({ method: 'POST', url: '/v1/vaults', payload: b, headers: signed('POST', '/v1/vaults', b, { creds: credsB }) });
    t.equal(created.statusCode, 202, 'B can still create a vault, so its refused rows were not refused by quota');
  });

  t.test('a reshare needs no body: target_tier is optional', async (t) => {
    const path = `/v1/vaults/${vaultB.id}/reshare`;
    const res = await app.inject({ method: 'POST', url: path, headers: signed('POST', path, undefined, { creds: credsB }) });
    t.equal(res.statusCode, 202, res.body);
    t.equal(res.json().status, 'accepted');
  });
});
