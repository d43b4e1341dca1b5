// The customer's side of passkey proofs (api/sdk/member-credential.ts): a member credential signed from
// the COSE_Key a WebAuthn registration verifier returns verifies as the nodes verify it, and names the
// same key; what the SDK refuses to write, it refuses before signing.
import t from 'tap';
import { encode } from 'cbor2';
import { exportJWK, generateKeyPair } from 'jose';
import { p256 } from '@noble/curves/nist.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { coseToJwk, passkeyAssertionBody, signMemberCredential } from '../../../api/sdk/member-credential.ts';
import { verifyMemberCredential } from '../../../core/auth/member-credential.ts';

t.test('a credential signed from a COSE key verifies under the registered key and carries that key', async (t) => {
  const id = await generateKeyPair('ES256', { extractable: true });
  const jwks = { keys: [{ ...(await exportJWK(id.publicKey)), kid: 'k1', alg: 'ES256' }] };
  const pub = p256.getPublicKey(p256.utils.randomSecretKey(), false);
  const cose = encode(new Map<number, number | Uint8Array>([[1, 2], [3, -7], [-1, 1], [-2, pub.slice(1, 33)], [-3, pub.slice(33)]]));
  const now = Math.floor(Date.now() / 1000);
  const jwt = await signMemberCredential({ key: id.privateKey, kid: 'k1', alg: 'ES256', audience: 'aud', subject: 'hsub_1', credentialId: new Uint8Array(20).fill(9), publicKey: cose, rpId: 'bank.example', origins: ['https://bank.example'], now });
  const c = await verifyMemberCredential({ jwks, audience: 'aud' }, jwt, now);
  t.equal(c.subject, 'hsub_1');
  t.same([...c.publicKey], [...cose], 'the nodes read back the same COSE key');
  t.same([...c.credentialId], [...new Uint8Array(20).fill(9)]);
  const edPub = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  t.same(coseToJwk(encode(new Map<number, number | Uint8Array>([[1, 1], [3, -8], [-1, 6], [-2, edPub]]))), { kty: 'OKP', crv: 'Ed25519', x: Buffer.from(edPub).toString('base64url') });
});

t.test('what the SDK refuses', async (t) => {
  const id = await generateKeyPair('ES256');
  const base = { key: id.privateKey, kid: 'k1', alg: 'ES256' as const, audience: 'aud', subject: 's', credentialId: 'AAAAAAAAAAAAAAAAAAAAAA', publicKey: { kty: 'EC', crv: 'P-256', x: 'x', y: 'y' }, rpId: 'bank.example', origins: ['https://bank.example'] };
  await t.rejects(signMemberCredential({ ...base, lifetimeSec: 401 * 86_400 }), { code: 'usage' }, 'longer than 400 days');
  await t.rejects(signMemberCredential({ ...base, origins: [] }), { code: 'usage' }, 'no origin');
  t.throws(() => coseToJwk(new Uint8Array([0xff])), { code: 'usage' }, 'not CBOR');
  t.throws(() => coseToJwk(encode(new Map<number, number>([[1, 3], [3, -257]]))), { code: 'usage' }, 'an RSA key');
  t.throws(() => passkeyAssertionBody({ id: 'AA', rawId: 'AB', response: { authenticatorData: 'a', clientDataJSON: 'b', signature: 'c' } }), { code: 'usage' }, 'rawId differs from id');
  t.same(passkeyAssertionBody({ id: 'AA', rawId: 'AA', response: { authenticatorData: 'a', clientDataJSON: 'b', signature: 'c', userHandle: 'u' } }), { id: 'AA', authenticator_data: 'a', client_data_json: 'b', signature: 'c' });
});
