// A passkey proof made by a real browser (docs/platform/member-actions.md "Passkey proofs"): headless
// Chromium with a virtual authenticator (user verification on) registers a passkey on a page of the
// customer's origin, the customer's member credential vouches for the key Chromium returned, and the
// assertion Chromium makes over an action's nonce passes the signer node's check for that intent and no
// other. Chromium writes the authenticator data, the client data JSON and the DER signature itself, so
// this checks the node against an implementation independent of the software authenticator the other
// tests use.
import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { existsSync } from 'node:fs';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { encode } from 'cbor2';
import { chromium } from 'playwright-core';
import { memberActionNonce } from '../../core/auth/member-action.ts';
import { signMemberCredential } from '../../api/sdk/member-credential.ts';
import { memberOrganization, newBinding, now, refusal } from './member-authorizer-fixture.ts';

const CHROMIUM = '/usr/bin/chromium';
const { request, authorizer: nodeAuthorizer } = memberOrganization('org_browser');

t.test('a passkey created and used by headless Chromium passes the node\'s check for its intent only', async (t) => {
  if (!existsSync(CHROMIUM)) return t.fail(`${CHROMIUM} is missing: run node deploy/test/ensure-chromium.mjs (npm test does)`);
  // The customer's page: localhost is a secure context and a valid RP ID.
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<!doctype html><title>bank</title>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const origin = `http://localhost:${(server.address() as AddressInfo).port}`;
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
  t.teardown(() => browser.close());
  const page = await browser.newPage();
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true } });
  await page.goto(`${origin}/`);

  // Registration on the customer's origin; the customer's server reads the key from the attested data.
  // Browser code as text: the page runs it, this file's types know no DOM.
  const created = (await page.evaluate(`(async () => {
    const c = await navigator.credentials.create({ publicKey: {
      rp: { id: 'localhost', name: 'Bank' }, user: { id: new Uint8Array([1, 2, 3, 4]), name: 'member-7', displayName: 'Member' },
      challenge: crypto.getRandomValues(new Uint8Array(32)), pubKeyCredParams: [{ type: 'public-key', alg: -7 }], authenticatorSelection: { userVerification: 'required' },
    } });
    return { id: c.id, publicKey: Array.from(new Uint8Array(c.response.getPublicKey())), alg: c.response.getPublicKeyAlgorithm() };
  })()`)) as { id: string; publicKey: number[]; alg: number };
  t.equal(created.alg, -7, 'ES256');
  // getPublicKey() is SubjectPublicKeyInfo; the credential's cnf.jwk is its P-256 point.
  const spki = new Uint8Array(created.publicKey);
  const point = spki.slice(spki.length - 65);
  const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  const cose = encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, point.slice(1, 33)], [-3, point.slice(33)]]));

  // The customer vouches for it with the SDK, under the key of its end-user-auth registration.
  const { authorizer, idp } = await nodeAuthorizer(t, 'ES256', 'id-1', 'bff-client');
  const credential = await signMemberCredential({ key: idp.privateKey, kid: 'id-1', alg: 'ES256', audience: 'bff-client', subject: 'member-7', credentialId: created.id, publicKey: cose, rpId: 'localhost', origins: [origin], now });

  // The approval: the action's nonce is the challenge.
  const req = request();
  const b = newBinding();
  const nonce = memberActionNonce(b.actionId, b.salt, bytesToHex(sha256(req.intent)));
  const answer = (await page.evaluate(`(async () => {
    const fromB64 = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (s.length % 4)) % 4)), (ch) => ch.charCodeAt(0));
    const c = await navigator.credentials.get({ publicKey: { challenge: fromB64(${JSON.stringify(nonce)}), rpId: 'localhost', allowCredentials: [{ type: 'public-key', id: fromB64(${JSON.stringify(created.id)}) }], userVerification: 'required' } });
    const arr = (x) => Array.from(new Uint8Array(x));
    return { rawId: arr(c.rawId), authenticatorData: arr(c.response.authenticatorData), clientDataJson: arr(c.response.clientDataJSON), signature: arr(c.response.signature) };
  })()`)) as { rawId: number[]; authenticatorData: number[]; clientDataJson: number[]; signature: number[] };
  const passkey = { credentialId: new Uint8Array(answer.rawId), authenticatorData: new Uint8Array(answer.authenticatorData), clientDataJson: new Uint8Array(answer.clientDataJson), signature: new Uint8Array(answer.signature) };
  t.equal(b64(passkey.credentialId), created.id);
  t.match(JSON.parse(Buffer.from(passkey.clientDataJson).toString()), { type: 'webauthn.get', challenge: nonce, origin }, 'Chromium\'s client data');

  const grant = await authorizer.authorize({ ...req, endUserToken: credential, memberAction: { ...b, passkey } });
  t.equal(grant.intentHash, bytesToHex(sha256(req.intent)), 'the node grants this intent');
  const other = request();
  await t.rejects(authorizer.authorize({ ...other, endUserToken: credential, memberAction: { ...b, passkey } }), refusal('member_action_mismatch'), 'and refuses the same answer for another intent');
  const flipped = new Uint8Array(passkey.signature);
  flipped[flipped.length - 1]! ^= 1;
  await t.rejects(authorizer.authorize({ ...req, endUserToken: credential, memberAction: { ...b, passkey: { ...passkey, signature: flipped } } }), refusal('bad_end_user_token'), 'or with a bit of the signature changed');
});
