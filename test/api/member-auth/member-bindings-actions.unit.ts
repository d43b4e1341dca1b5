// A BYO member the tenant disabled (docs/platform/member-auth.md "BYO OIDC members") can no longer act:
// its member actions have no session left, and a signing session completed before the disabling is
// refused by POST /v1/transactions, which checks the binding. Both APIs, the real OpenID provider.
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { walletApp } from '../wallets/wallet-app.ts';
import { startProvider } from './oidc-provider-fixture.ts';
import { newExchangeId } from './member-auth-harness.ts';
import { encodeIntent, signIntent } from '../../../core/intents/intent.ts';
import { evmIntentFromFields } from '../../../core/intents/evm-fields.ts';
import { ACTION_COLLECTIONS } from '../../../api/member-auth/member-action-records.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

t.test('a member the tenant disabled: its member actions and its completed signing session are refused, and nothing changes', async (t) => {
  const s = await walletApp(t, { platform: { webhookAllowedDestinations: ['127.0.0.1'] } });
  const op = await startProvider(t);
  const app = (await s.bearer('PUT', '/v1/tenant/member-auth/application', { issuer: op.issuer, audience: 'bff-client', provider_namespace: 'acme-idp' })).json() as { id: string; publishable_key: string };
  t.equal((await s.signed('PUT', '/v1/config/end-user-auth', { jwks: { keys: [op.publicJwk] }, audience: 'bff-client' })).statusCode, 200);
  const v = await s.vaults.createVault(s.acme.org, { tier: 'hosted', end_user_subject: 'alice' });
  await s.store.batch([s.vaults.vaultOp({ ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(randomBytes(32)) } satisfies VaultRecord)]);
  const wallet = await s.wallet(s.acme.org, v.id);
  const bff = (method: 'GET' | 'POST', url: string, body: unknown, session?: string) =>
    s.bearer(method, url, body, s.acme.owner, { 'x-svc-publishable-key': app.publishable_key, ...(session ? { 'x-member-session-id': session } : {}) });
  let seq = 0;
  const intent = () => {
    const key = `mbd-${process.pid}-${++seq}`;
    const bytes = encodeIntent(evmIntentFromFields({
      organization: s.acme.org, walletId: wallet.id, chainId: 31337n, nonce: BigInt(seq), from: wallet.address, to: '0x00000000000000000000000000000000000a11ce', amount: '1000',
      idempotencyKey: key, notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    }));
    return { b64: Buffer.from(bytes).toString('base64'), hex: bytesToHex(bytes), key, sig: bytesToHex(signIntent(bytes, s.acme.creds.secretKey)) };
  };

  const nonce = (await bff('POST', '/v1/member-auth/proof/challenges', {})).json().nonce as string;
  const signedIn = await bff('POST', '/v1/member-auth/proof/exchange', { exchange_id: newExchangeId(), id_token: await op.signIn({ sub: 'alice', nonce, maxAge: 300 }) });
  t.equal(signedIn.statusCode, 201, signedIn.body);
  const { session_id: session, member } = signedIn.json() as { session_id: string; member: { id: string } };
  const i = intent();
  const begun = await bff('POST', '/v1/member-actions', { kind: 'transaction.sign', wallet_id: wallet.id, intent: i.b64 }, session);
  t.equal(begun.statusCode, 201, begun.body);
  const proof = await op.signIn({ sub: 'alice', nonce: begun.json().proof.nonce, maxAge: 300 });
  const done = await bff('POST', '/v1/member-actions/external/complete', { action_id: begun.json().id, id_token: proof }, session);
  t.equal(done.statusCode, 200, done.body);

  const del = await s.bearer('DELETE', `/v1/tenant/member-auth/applications/${app.id}/bindings/${member.id}`);
  t.equal(del.statusCode, 204, del.body);

  const snapshot = async () => {
    const out: unknown[] = [];
    for (const c of [ACTION_COLLECTIONS.actions.name, ACTION_COLLECTIONS.signing.name, 'audit_log', 'transactions']) for await (const r of s.store.all(c)) out.push(r);
    return JSON.stringify(out);
  };
  const before = await snapshot();
  const tx = await s.signed('POST', '/v1/transactions', { wallet_id: wallet.id, intent: i.hex, idempotency_key: i.key, intent_signature: i.sig, member_signing_session: done.json().signing_session.id });
  t.same([tx.statusCode, tx.json().code], [403, 'member_binding_inactive'], 'the signing session completed before the member was disabled is refused');
  const again = await bff('POST', '/v1/member-actions', { kind: 'transaction.sign', wallet_id: wallet.id, intent: intent().b64 }, session);
  t.same([again.statusCode, again.json().code], [401, 'member_session_invalid'], 'its session was revoked: no new action');
  t.equal(await snapshot(), before, 'nothing changed');
});
