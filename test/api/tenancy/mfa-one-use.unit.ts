// Second factors and MFA proofs (docs/security.md#second-factors-totp-and-mfa-proofs): a TOTP code is
// accepted once, never for a step at or before the last accepted one, and that is remembered in the
// store; an MFA token names the action and resource it was issued for and is used up by its first use.
import t, { type Test } from 'tap';
import { setupPlatform } from '../setup-platform.ts';
import { totp } from '../../../api/tenancy/totp.ts';
import { createPlatform } from '../../../api/platform.ts';

async function withEndpoints(t: Test) {
  let now = Date.parse('2026-03-01T00:00:10Z');
  const s = await setupPlatform(t, { clock: () => now });
  const secret = Buffer.from(s.owner.totpSecret!, 'hex');
  const create = async () => (await s.call('POST', '/v1/webhook-endpoints', { url: 'https://example.com/hook', events: ['payment.confirmed'] })).json() as { id: string };
  const a = await create();
  const b = await create();
  const code = (offsetSeconds = 0) => totp(secret, Math.floor(now / 1000) + offsetSeconds);
  const verify = (c: string, action: string) => s.call('POST', '/v1/mfa/verifications', { code: c, action });
  const rotate = (id: string, token: string | undefined) => s.call('POST', `/v1/webhook-endpoints/${id}/rotate`, {}, undefined, token ? { 'svc-mfa-token': token } : {});
  return { ...s, secret, a, b, code, verify, rotate, tick: (ms: number) => { now += ms; }, now: () => now };
}

t.test('a TOTP code is accepted once; an earlier step after a later one is refused; durably', async (t) => {
  const s = await withEndpoints(t);
  const action = `rotate_secret:${s.a.id}`;
  const first = await s.verify(s.code(), action);
  t.equal(first.statusCode, 201);
  const again = await s.verify(s.code(), action);
  t.equal(again.statusCode, 403, 'the same code a second time');
  t.equal(again.json().code, 'mfa_failed');
  t.equal((await s.verify(s.code(-30), action)).json().code, 'mfa_failed', 'the previous step (inside the skew window) after the current one was accepted');
  t.equal((await s.verify(s.code(30), action)).statusCode, 201, 'the next step is still good');
  t.equal((await s.verify(s.code(), action)).json().code, 'mfa_failed', 'and then the current step is earlier than the last accepted: refused');

  // The last step is in the store: another process over the same data refuses the same code.
  const p2 = await createPlatform(s.store, { clock: s.now });
  t.notOk(await p2.tenancy.checkTotp(s.owner.key.id, s.code(30), Math.floor(s.now() / 1000)), 'refused after a restart too');
  s.tick(60_000);
  t.ok(await p2.tenancy.checkTotp(s.owner.key.id, s.code(), Math.floor(s.now() / 1000)), 'a later step is accepted');
});

t.test('two simultaneous verifications with one code: exactly one succeeds', async (t) => {
  const s = await withEndpoints(t);
  const c = s.code();
  const rs = await Promise.all([0, 1, 2, 3].map(() => s.verify(c, `rotate_secret:${s.a.id}`)));
  t.same(rs.map((r) => r.statusCode).sort(), [201, 403, 403, 403]);
});

t.test('five wrong codes lock the factor for five minutes, even against the right code', async (t) => {
  const s = await withEndpoints(t);
  const action = `rotate_secret:${s.a.id}`;
  const wrong = s.code() === '000000' ? '111111' : '000000';
  for (let i = 0; i < 5; i++) t.equal((await s.verify(wrong, action)).json().code, 'mfa_failed', `wrong code ${i + 1}`);
  const locked = await s.verify(s.code(), action);
  t.equal(locked.statusCode, 429, 'the right code is refused while locked');
  t.equal(locked.json().code, 'rate_limited');
  s.tick(301_000);
  t.equal((await s.verify(s.code(), action)).statusCode, 201, 'accepted once the window has passed');
  t.equal((await s.verify(wrong, action)).json().code, 'mfa_failed', 'a success clears the count: a new wrong code is only a failure');
});

t.test('verification names an action: missing or unknown action is 400; the token says which', async (t) => {
  const s = await withEndpoints(t);
  t.equal((await s.call('POST', '/v1/mfa/verifications', { code: s.code() })).statusCode, 400, 'no action');
  t.equal((await s.verify(s.code(), 'delete_everything:whe_1')).statusCode, 400, 'not an MFA action');
  t.equal((await s.verify(s.code(), 'rotate_secret')).statusCode, 400, 'no resource');
  const ok = await s.verify(s.code(), `rotate_secret:${s.a.id}`);
  t.equal(ok.statusCode, 201);
  t.equal(ok.json().action, `rotate_secret:${s.a.id}`);
});

t.test('one MFA token allows one rotation; a token for one endpoint does not rotate another', async (t) => {
  const s = await withEndpoints(t);
  const token = (await s.verify(s.code(), `rotate_secret:${s.a.id}`)).json().mfa_token as string;
  const onB = await s.rotate(s.b.id, token);
  t.equal(onB.statusCode, 403, 'token for endpoint A used on endpoint B');
  t.equal(onB.json().code, 'mfa_required');
  const first = await s.rotate(s.a.id, token);
  t.equal(first.statusCode, 200, 'the refused use on B did not spend it');
  const second = await s.rotate(s.a.id, token);
  t.equal(second.statusCode, 403, 'a second rotation with the same token');
  t.equal(second.json().code, 'mfa_required');
  t.equal((await s.call('GET', `/v1/webhook-endpoints/${s.a.id}`)).json().hmac_secret_fingerprint, first.json().hmac_secret_fingerprint, 'the refused rotation changed nothing');
  const audit = (await s.platform.audit.list(s.sandbox.id)).filter((e) => e.action === 'webhook_endpoint.rotate_secret');
  t.equal(audit.length, 1, 'one rotation happened');
});

t.test('two simultaneous rotations with one token: exactly one succeeds', async (t) => {
  const s = await withEndpoints(t);
  const token = (await s.verify(s.code(), `rotate_secret:${s.a.id}`)).json().mfa_token as string;
  const rs = await Promise.all([0, 1, 2, 3].map(() => s.rotate(s.a.id, token)));
  t.same(rs.map((r) => r.statusCode).sort(), [200, 403, 403, 403]);
  t.equal((await s.platform.audit.list(s.sandbox.id)).filter((e) => e.action === 'webhook_endpoint.rotate_secret').length, 1);
});

t.test("a token is bound to its key and expires; a tampered one is refused", async (t) => {
  const s = await withEndpoints(t);
  const other = await s.platform.tenancy.createKey(s.sandbox.id, 'owner', { mfa: true });
  const otherCode = totp(Buffer.from(other.totpSecret!, 'hex'), Math.floor(s.now() / 1000));
  const foreign = (await s.call('POST', '/v1/mfa/verifications', { code: otherCode, action: `rotate_secret:${s.a.id}` }, other.token)).json().mfa_token as string;
  t.equal((await s.rotate(s.a.id, foreign)).json().code, 'mfa_required', "another key's token");
  const token = (await s.verify(s.code(), `rotate_secret:${s.a.id}`)).json().mfa_token as string;
  const [p, mac] = token.split('.');
  const payload = JSON.parse(Buffer.from(p!, 'base64url').toString('utf8'));
  const edited = Buffer.from(JSON.stringify({ ...payload, a: `rotate_secret:${s.b.id}` })).toString('base64url');
  t.equal((await s.rotate(s.b.id, `${edited}.${mac}`)).json().code, 'mfa_required', 'an edited action');
  s.tick(301_000);
  t.equal((await s.rotate(s.a.id, token)).json().code, 'mfa_required', 'expired after five minutes');
  t.equal((await s.rotate(s.a.id, undefined)).json().code, 'mfa_required', 'none at all');
});

t.test('used-token markers are pruned an hour after the token expired', async (t) => {
  const s = await withEndpoints(t);
  const token = (await s.verify(s.code(), `rotate_secret:${s.a.id}`)).json().mfa_token as string;
  t.equal((await s.rotate(s.a.id, token)).statusCode, 200);
  const count = async () => {
    let n = 0;
    for await (const _ of s.store.all('mfa_token_uses')) n++;
    return n;
  };
  t.equal(await count(), 1);
  t.equal(await s.platform.mfa.prune(Math.floor(s.now() / 1000) + 300 + 3600 - 1), 0, 'kept while it could still matter');
  t.equal(await s.platform.mfa.prune(Math.floor(s.now() / 1000) + 300 + 3600 + 1), 1);
  t.equal(await count(), 0);
});
