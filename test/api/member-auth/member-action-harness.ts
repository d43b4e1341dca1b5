// The BYO member-action harness (docs/platform/member-actions.md): both APIs over a wallet app, a real
// OpenID provider (oidc-provider-fixture.ts), the organization's end-user auth registered to it, a
// hosted vault wallet bound to `alice`, and helpers to sign in, begin, complete and submit.
import type { Test } from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { walletApp } from '../wallets/wallet-app.ts';
import { startProvider } from './oidc-provider-fixture.ts';
import { newExchangeId } from './member-auth-harness.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import { SESSION_COLLECTIONS } from '../../../api/member-auth/member-session-records.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

export const P = {
  begin: '/v1/member-actions',
  complete: '/v1/member-actions/external/complete',
  challenges: '/v1/member-auth/proof/challenges',
  exchange: '/v1/member-auth/proof/exchange',
} as const;

export interface Begun { id: string; status: string; intent_sha256: string; expires_at: string; proof: { nonce: string; max_age: number; prompt: string; acr_values?: string; required_amr?: string[] } }
export interface Completed { id: string; status: string; signing_session: { id: string; signing_url: string; expires_at: string } }

export async function memberActionSetup(t: Test, byo: Record<string, unknown> = {}) {
  let skewMs = 0;
  const clock = () => Date.now() + skewMs;
  const s = await walletApp(t, { platform: { webhookAllowedDestinations: ['127.0.0.1'], clock } });
  const op = await startProvider(t);
  const put = await s.bearer('PUT', '/v1/tenant/member-auth/application', { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp', ...byo });
  if (put.statusCode !== 201) throw new Error(`BYO application: ${put.body}`);
  const app = put.json() as { id: string; publishable_key: string };
  // The organization's end-user auth: the provider's JWKS and the OIDC client id as audience (docs/end-user-auth.md).
  const registerEndUserAuth = async (audience = 'bff-client') => {
    const r = await s.signed('PUT', '/v1/config/end-user-auth', { jwks: { keys: [op.publicJwk] }, audience });
    if (r.statusCode !== 200) throw new Error(`end-user auth: ${r.body}`);
  };
  await registerEndUserAuth();

  /** An active hosted vault of Acme (end-user auth as registered at creation), bound to `subject` when given, and an EVM wallet. */
  const hostedWallet = async (subject?: string, over: Partial<VaultRecord> = {}) => {
    const v = await s.vaults.createVault(s.acme.org, { tier: 'hosted', ...(subject ? { end_user_subject: subject } : {}) });
    const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)), ...over };
    await s.store.batch([s.vaults.vaultOp(active)]);
    return s.wallet(s.acme.org, active.id);
  };
  const wallet = await hostedWallet('alice');

  let seq = 0;
  /** Canonical intent bytes for `w`, signed with Acme's API key. */
  const intent = (w = wallet, amount = '1000') => {
    const bytes = encodeIntent(evmIntentFromFields({
      organization: s.acme.org, walletId: w.id, chainId: 31337n, nonce: BigInt(seq), from: w.address, to: '0x00000000000000000000000000000000000a11ce', amount,
      idempotencyKey: `ma-${process.pid}-${++seq}`, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    }));
    return { bytes, b64: Buffer.from(bytes).toString('base64'), hex: bytesToHex(bytes), key: `ma-${process.pid}-${seq}`, sig: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  };

  const bff = (method: 'GET' | 'POST', url: string, body: unknown, o: { session?: string; token?: string; pk?: string; headers?: Record<string, string> } = {}) =>
    s.bearer(method, url, body, o.token ?? s.acme.owner, { 'x-svc-publishable-key': o.pk ?? app.publishable_key, ...(o.session ? { 'x-member-session-id': o.session } : {}), ...o.headers });

  /** The BYO exchange: challenge, the provider's code flow, exchange. */
  const signIn = async (sub = 'alice', token = s.acme.owner) => {
    const c = await bff('POST', P.challenges, {}, { token });
    const idToken = await op.signIn({ sub, nonce: c.json().nonce, maxAge: 300 });
    const r = await bff('POST', P.exchange, { exchange_id: newExchangeId(), id_token: idToken }, { token });
    if (r.statusCode !== 201) throw new Error(`exchange: ${r.body}`);
    return r.json().session_id as string;
  };
  const begin = (session: string, i = intent(), w = wallet, o: { token?: string } = {}) => bff('POST', P.begin, { kind: 'transaction.sign', wallet_id: w.id, intent: i.b64 }, { session, ...o });
  const complete = (session: string, actionId: string, idToken: string, o: { token?: string } = {}) => bff('POST', P.complete, { action_id: actionId, id_token: idToken }, { session, ...o });
  const submit = (i: ReturnType<typeof intent>, extra: Record<string, unknown>, w = wallet) =>
    s.signed('POST', '/v1/transactions', { wallet_id: w.id, intent: i.hex, idempotency_key: i.key, intent_signature: i.sig, ...extra });

  /** Every record member actions and proofs write, and the audit log. */
  const snapshot = async () => {
    const out: Record<string, unknown[]> = {};
    for (const c of [ACTION_COLLECTIONS.actions.name, ACTION_COLLECTIONS.signing.name, SESSION_COLLECTIONS.acceptedProofs.name, 'audit_log', 'transactions']) {
      const rows: unknown[] = [];
      for await (const r of s.store.all(c)) rows.push(r);
      out[c] = rows;
    }
    return JSON.stringify(out);
  };
  return { ...s, server: s.app, newWallet: s.wallet, op, app, wallet, hostedWallet, intent, bff, signIn, begin, complete, submit, snapshot, registerEndUserAuth, advance: (seconds: number) => { skewMs += seconds * 1000; } };
}
