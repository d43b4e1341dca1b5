// The BFF's cookies (platform-api.md "BFF helper and browser rules"; docs/platform/bff.md "Cookies"): the
// durable cookie is __Host- (Secure, Path=/, no Domain), HttpOnly, SameSite=Strict; the flow cookie is
// short-lived and SameSite=Lax; each holds only an opaque reference, and anything else is refused.
import t, { type Test } from 'tap';
import { randomBytes } from 'node:crypto';
import {
  BffError, FLOW_COOKIE, SESSION_COOKIE, clearFlowCookie, clearSessionCookie, parseCookieHeader, readSessionReference, readTransactionId,
  serializeFlowCookie, serializeSessionCookie,
} from '../../api/sdk/index.ts';

const ref = `bfr_${randomBytes(32).toString('base64url')}`;
const tx = `bft_${randomBytes(32).toString('base64url')}`;

/** The attributes of a Set-Cookie header, lower-cased names, as a browser reads them. */
function attributes(setCookie: string): { name: string; value: string; attrs: Map<string, string> } {
  const [pair, ...rest] = setCookie.split(';').map((s) => s.trim());
  const at = pair!.indexOf('=');
  return { name: pair!.slice(0, at), value: pair!.slice(at + 1), attrs: new Map(rest.map((a) => { const i = a.indexOf('='); return i < 0 ? [a.toLowerCase(), ''] : [a.slice(0, i).toLowerCase(), a.slice(i + 1)]; })) };
}

const refused = (t: Test, fn: () => unknown, why: RegExp, what: string) => {
  try {
    fn();
    t.fail(`${what}: not refused`);
  } catch (err) {
    t.ok(err instanceof BffError && err.code === 'cookie_refused', `${what}: cookie_refused`);
    t.match((err as Error).message, why, what);
  }
};

t.test('the durable cookie: __Host- host-only, Secure, Path=/, no Domain, HttpOnly, SameSite=Strict, an opaque reference only', async (t) => {
  const c = attributes(serializeSessionCookie(ref));
  t.equal(c.name, SESSION_COOKIE);
  t.ok(c.name.startsWith('__Host-'));
  t.equal(c.value, ref);
  t.equal(c.attrs.get('path'), '/');
  t.ok(c.attrs.has('secure'));
  t.ok(c.attrs.has('httponly'));
  t.equal(c.attrs.get('samesite'), 'Strict');
  t.notOk(c.attrs.has('domain'), 'no Domain: host-only');
  t.equal(c.attrs.get('max-age'), String(30 * 24 * 3600), 'a sign-in lives 30 days at most');
  const cleared = attributes(clearSessionCookie());
  t.same([cleared.name, cleared.value, cleared.attrs.get('max-age'), cleared.attrs.get('samesite'), cleared.attrs.has('secure')], [SESSION_COOKIE, '', '0', 'Strict', true], 'removal matches the attributes');
  t.equal(attributes(serializeSessionCookie(ref, { name: '__Host-app', maxAge: 3600 })).attrs.get('max-age'), '3600');
});

t.test('the flow cookie: short-lived, SameSite=Lax, HttpOnly, Secure, a transaction id only', async (t) => {
  const c = attributes(serializeFlowCookie(tx));
  t.equal(c.name, FLOW_COOKIE);
  t.equal(c.value, tx);
  t.equal(c.attrs.get('samesite'), 'Lax', 'carried on the top-level redirect back from the provider');
  t.ok(c.attrs.has('secure') && c.attrs.has('httponly'));
  t.equal(c.attrs.get('path'), '/');
  t.notOk(c.attrs.has('domain'));
  t.equal(c.attrs.get('max-age'), '600');
  t.equal(attributes(clearFlowCookie()).attrs.get('max-age'), '0');
  refused(t, () => serializeFlowCookie(tx, { maxAge: 3600 }), /Max-Age/, 'a flow cookie of an hour');
});

t.test('refused: secrets, anything not an opaque reference, and a durable cookie without __Host-', async (t) => {
  const secrets: [string, RegExp][] = [
    [`mss_${randomBytes(32).toString('base64url')}`, /member session id/],
    [`mas_${randomBytes(32).toString('base64url')}`, /signing session id/],
    [`mrc_${randomBytes(32).toString('base64url')}`, /refresh credential/],
    [`svc_test_key_0123456789abcdef0123456789_${randomBytes(32).toString('base64url')}`, /bearer key/],
    ['eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2ln', /JWT/],
    ['abc.def.ghi', /JWS/],
  ];
  for (const [v, why] of secrets) {
    refused(t, () => serializeSessionCookie(v), why, `durable cookie carrying ${why.source}`);
    refused(t, () => serializeFlowCookie(v), why, `flow cookie carrying ${why.source}`);
  }
  refused(t, () => serializeSessionCookie('bfr_short'), /opaque BFF session reference/, 'a short reference');
  refused(t, () => serializeSessionCookie(tx), /opaque BFF session reference/, 'a transaction id in the durable cookie');
  refused(t, () => serializeFlowCookie(ref), /transaction id/, 'a session reference in the flow cookie');
  refused(t, () => serializeSessionCookie(`${ref}; Domain=example.com`), /opaque/, 'attribute injection');
  refused(t, () => serializeSessionCookie(ref, { name: 'session' }), /__Host-/, 'a durable cookie without the prefix');
  refused(t, () => serializeSessionCookie(ref, { name: '__Secure-session' }), /__Host-/, 'a __Secure- cookie (may carry a Domain)');
  refused(t, () => serializeFlowCookie(tx, { name: 'flow' }), /__Host-/, 'a flow cookie without the prefix');
  refused(t, () => serializeSessionCookie(ref, { name: '__Host-a b' }), /token/, 'a name that is no token');
  refused(t, () => serializeSessionCookie(ref, { maxAge: 0 }), /Max-Age/, 'Max-Age 0 through the setter');
  refused(t, () => clearSessionCookie('session'), /__Host-/, 'removing a non-__Host- cookie');
});

t.test('reading: only a well-formed reference sent once', async (t) => {
  t.equal(readSessionReference(`a=1; ${SESSION_COOKIE}=${ref}; b=2`), ref);
  t.equal(readTransactionId(`${FLOW_COOKIE}=${tx}`), tx);
  t.equal(readSessionReference(`${SESSION_COOKIE}="${ref}"`), ref, 'a quoted value');
  t.equal(readSessionReference(undefined), undefined);
  t.equal(readSessionReference(`${SESSION_COOKIE}=mss_abc`), undefined, 'a malformed value is no reference');
  t.equal(readSessionReference(`${SESSION_COOKIE}=${ref}; ${SESSION_COOKIE}=${ref}`), undefined, 'sent twice: ambiguous, none');
  t.equal(readSessionReference(`${FLOW_COOKIE}=${tx}`), undefined, 'the flow cookie is not the session cookie');
  t.same([...parseCookieHeader('a=1; b=; =x; c').entries()], [['a', ['1']], ['b', ['']]]);
});
