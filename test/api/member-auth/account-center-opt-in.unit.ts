// The Account Center passkey opt-in as a member-auth setting (docs/end-user-auth.md "Account Center
// passkeys"): a Hosted application's `account_center_passkeys` turns on only while the organization's
// customer-signed end-user-auth registration names this service's Account Center key and origin (what
// the nodes enforce), so a bearer key alone cannot turn it on; the key to register is published per
// organization. Each refusal reads the application back.
import t from 'tap';
import { exportJWK, generateKeyPair } from 'jose';
import { walletApp } from '../wallets/wallet-app.ts';
import { signedHeaders } from '../../../api/sdk/request-signer.ts';

const PUBLIC = 'https://api.custody.example';

t.test('account_center_passkeys: on only after the organization registered the service\'s Account Center key', async (t) => {
  const s = await walletApp(t, { env: { API_PUBLIC_URL: PUBLIC } });
  const must = async (r: Awaited<ReturnType<typeof s.bearer>>, status: number) => {
    t.equal(r.statusCode, status, r.body);
    return r.json() as Record<string, unknown>;
  };
  await must(await s.bearer('POST', '/v1/tenant/member-auth/allowed-origins', { origin: 'https://app.acme.example' }), 201);
  await must(await s.bearer('POST', '/v1/tenant/member-auth/redirect-urls', { url: 'https://app.acme.example/cb' }), 201);
  const bff = (await s.platform.tenancy.createKey(s.acme.sandbox.id, 'member_auth')).key;
  const app = await must(await s.bearer('POST', '/v1/tenant/member-auth/applications/hosted', { enrollment: 'open', origin: 'https://app.acme.example', result_callback_url: 'https://app.acme.example/cb', bff_key_id: bff.id }), 201);
  t.match(app, { hosted: { account_center_passkeys: false } }, 'off by default');
  const url = `/v1/tenant/member-auth/applications/${app.id as string}`;
  const setting = async () => ((await s.bearer('GET', '/v1/tenant/member-auth/applications')).json() as { data: { id: string; version: number; hosted: { account_center_passkeys: boolean } }[] }).data.find((a) => a.id === app.id)!;
  const turnOn = () => s.bearer('PATCH', url, { account_center_passkeys: true });

  const key = await must(await s.bearer('GET', '/v1/tenant/member-auth/account-center-key'), 200);
  t.match(key, { organization: s.acme.org, registered: false, account_center: { origin: PUBLIC, jwk: { kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA' } } });
  const globexKey = await must(await s.bearer('GET', '/v1/tenant/member-auth/account-center-key', undefined, s.globex.owner), 200);
  t.not((globexKey.account_center as { jwk: { x: string } }).jwk.x, (key.account_center as { jwk: { x: string } }).jwk.x, 'one key per organization');
  t.equal((await s.bearer('GET', '/v1/tenant/member-auth/account-center-key', undefined, await s.acme.key('owner', s.acme.production.id))).statusCode, 404, 'the unlinked workspace has no organization here');

  const refused = await turnOn();
  t.match({ status: refused.statusCode, code: refused.json().code }, { status: 409, code: 'account_center_opt_in_unregistered' }, 'a bearer key alone cannot turn it on');
  t.match(await setting(), { version: 1, hosted: { account_center_passkeys: false } }, 'unchanged');

  // The registration, signed with the organization's API key (the vault API), names the opt-in.
  const idp = await generateKeyPair('ES256');
  const jwks = { keys: [{ ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256' }] };
  const register = (body: unknown) => {
    const payload = JSON.stringify(body);
    return s.app.inject({ method: 'PUT', url: '/v1/config/end-user-auth', payload, headers: { 'content-type': 'application/json', ...signedHeaders(s.acme.creds, 'PUT', `${PUBLIC}/v1/config/end-user-auth`, payload) } });
  };
  const otherKey = { jwk: { ...(await exportJWK((await generateKeyPair('EdDSA', { crv: 'Ed25519' })).publicKey)), kid: 'someone-else' }, origin: PUBLIC };
  t.equal((await register({ jwks, audience: 'acme', account_center: otherKey })).statusCode, 200, 'an opt-in naming another key');
  t.match((await turnOn()).json(), { code: 'account_center_opt_in_unregistered' }, 'is not this service\'s');
  t.match(await register({ jwks, audience: 'acme', account_center: { ...(key.account_center as object), origin: 'https://evil.example' } }), { statusCode: 200 });
  t.match((await turnOn()).json(), { code: 'account_center_opt_in_unregistered' }, 'nor is another origin');
  t.equal((await register({ jwks: { keys: [{ ...jwks.keys[0], kid: (key.account_center as { jwk: { kid: string } }).jwk.kid }] }, audience: 'acme', account_center: key.account_center })).statusCode, 400, 'a customer key with the Account Center key\'s kid is refused');
  t.equal((await register({ jwks, audience: 'acme', account_center: { ...(key.account_center as object), jwk: { kty: 'RSA', n: 'AQAB', e: 'AQAB', kid: 'x' } } })).statusCode, 400, 'a malformed opt-in is refused');
  t.match(await setting(), { version: 1, hosted: { account_center_passkeys: false } }, 'still off');

  const ok = await register({ jwks, audience: 'acme', account_center: key.account_center });
  t.match(ok.json(), { status: 'registered', account_center: true });
  t.match(await must(await s.bearer('GET', '/v1/tenant/member-auth/account-center-key'), 200), { registered: true });
  t.match(await must(await turnOn(), 200), { version: 2, hosted: { account_center_passkeys: true } }, 'on once registered');
  t.match(await must(await s.bearer('PATCH', url, { require_totp: true }), 200), { hosted: { account_center_passkeys: true, require_totp: true } }, 'other changes keep it');
  t.equal((await s.platform.audit.list(s.acme.sandbox.id)).filter((e) => e.action === 'member_auth.application.update').length, 2, 'each change audited; the refusals none');

  // A later registration without the opt-in ends it at the nodes at once; turning the setting on again needs a new registration.
  await register({ jwks, audience: 'acme' });
  t.match(await must(await s.bearer('GET', '/v1/tenant/member-auth/account-center-key'), 200), { registered: false });
  await must(await s.bearer('PATCH', url, { account_center_passkeys: false }), 200);
  t.match((await turnOn()).json(), { code: 'account_center_opt_in_unregistered' });
  t.match(await setting(), { hosted: { account_center_passkeys: false } });
  t.match((await s.bearer('PATCH', url, { account_center_passkeys: true }, await s.acme.key('viewer'))).json(), { code: 'role_denied' });
});
