// Trust-log entries, version 1 (docs/trust.md): the vectors pin the encoding and the key-id derivation
// byte for byte; decoding accepts exactly one canonical entry; a bootstrap verifies only under the
// operator key that signed it; a request entry verifies as the API verified the request.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { apiKeyId } from '../../../core/trust/api-key-id.ts';
import {
  bootstrapMessage, decodeTrustEntry, encodeTrustEntry, signBootstrap, trustEntryHash, TrustEntryError, verifyBootstrap, verifyRequestEntry,
  type BootstrapEntry, type RequestEntry,
} from '../../../core/trust/trust-entry.ts';
import { lengthPrefixed } from '../../../core/codec/transcript.ts';
import { signedEntry, signer } from './trust-fixtures.ts';

const V = JSON.parse(readFileSync(new URL('../../vectors/trust-entries-v1.json', import.meta.url), 'utf8')) as {
  operator_secret_key_hex: string; operator_public_key_hex: string; org: string; api_secret_key_hex: string; api_public_key_hex: string; api_key_id: string;
  second_public_key_hex: string; second_key_id: string; bootstrap_message_hex: string; entries: { name: string; hex: string; hash: string }[];
};
const entry = (name: string) => hexToBytes(V.entries.find((e) => e.name === name)!.hex);

t.test('API key ids: key_ + 24 hex of the domain-separated, length-prefixed hash', async (t) => {
  t.equal(apiKeyId(V.org, V.api_public_key_hex), V.api_key_id);
  t.equal(apiKeyId(V.org, V.second_public_key_hex), V.second_key_id);
  const by = bytesToHex(sha256(lengthPrefixed(['custody/api-key-id/v1', V.org, hexToBytes(V.api_public_key_hex)]))).slice(0, 24);
  t.equal(V.api_key_id, `key_${by}`, 'the documented construction');
  t.equal(apiKeyId(V.org, V.api_public_key_hex.toUpperCase()), V.api_key_id, 'hex case does not matter');
  t.not(apiKeyId('org_other', V.api_public_key_hex), V.api_key_id, 'bound to the organization');
  t.throws(() => apiKeyId(V.org, 'ab'), TypeError);
  t.throws(() => apiKeyId('bad org', V.api_public_key_hex), TypeError);
});

t.test('the vectors: the same inputs give the same bytes, and every entry decodes and re-encodes to itself', async (t) => {
  const operator = hexToBytes(V.operator_secret_key_hex);
  t.equal(bytesToHex(bootstrapMessage(V.org, V.api_public_key_hex, 1_795_000_000)), V.bootstrap_message_hex);
  t.equal(bytesToHex(signBootstrap(V.org, V.api_public_key_hex, 1_795_000_000, operator)), V.entries[0]!.hex);
  for (const e of V.entries) {
    const bytes = hexToBytes(e.hex);
    t.equal(trustEntryHash(bytes), e.hash, `${e.name}: hash`);
    t.equal(bytesToHex(encodeTrustEntry(decodeTrustEntry(bytes))), e.hex, `${e.name}: round trip`);
  }
  const b = decodeTrustEntry(entry('bootstrap')) as BootstrapEntry;
  t.match(b, { kind: 'bootstrap', org: V.org, keyId: V.api_key_id, publicKey: V.api_public_key_hex, created: 1_795_000_000, operatorKey: V.operator_public_key_hex });
  t.ok(verifyBootstrap(b, [V.operator_public_key_hex]));
  t.notOk(verifyBootstrap(b, [bytesToHex(ed25519.getPublicKey(new Uint8Array(32).fill(1)))]), 'not under another operator key');
  const r = decodeTrustEntry(entry('add api key')) as RequestEntry;
  t.equal(r.method, 'POST');
  t.equal(r.url, 'https://api.custody.test/v1/api-keys');
  t.equal(r.headers['content-type'], 'application/json');
  t.same(verifyRequestEntry(r, (id) => (id === V.api_key_id ? hexToBytes(V.api_public_key_hex) : undefined)), { keyId: V.api_key_id, created: 1_795_000_100, path: '/v1/api-keys' });
});

t.test('decoding refuses anything but one canonical entry', async (t) => {
  const good = entry('bootstrap');
  const cases: [string, Uint8Array][] = [
    ['empty', new Uint8Array()],
    ['other domain', Uint8Array.from([...good.slice(0, 13), 1, ...good.slice(14)])],
    ['version 2', Uint8Array.from([...good.slice(0, 14), 2, ...good.slice(15)])],
    ['unknown kind', Uint8Array.from([...good.slice(0, 15), 9, ...good.slice(16)])],
    ['truncated', good.slice(0, good.length - 1)],
    ['trailing byte', Uint8Array.from([...good, 0])],
  ];
  for (const [name, bytes] of cases) t.throws(() => decodeTrustEntry(bytes), TrustEntryError, name);
  const b = decodeTrustEntry(good) as BootstrapEntry;
  // A key id that is not derived from the organization and key (one hex digit of it changed).
  const at = 14 + 2 + 2 + V.org.length + 2 + 'key_'.length;
  const wrongId = Uint8Array.from(good);
  wrongId[at] = wrongId[at] === 0x30 ? 0x31 : 0x30;
  t.throws(() => decodeTrustEntry(wrongId), /not the one derived/, 'key id must match');
  t.ok(b.signature.length === 64);
  const r = decodeTrustEntry(entry('add api key')) as RequestEntry;
  t.throws(() => encodeTrustEntry({ ...r, method: 'post' }), TrustEntryError, 'method is upper case');
  t.throws(() => encodeTrustEntry({ ...r, url: '/v1/api-keys' }), TrustEntryError, 'url is absolute');
  t.throws(() => encodeTrustEntry({ ...r, body: new Uint8Array(256 * 1024 + 1) }), TrustEntryError, 'body size');
});

t.test('a request entry verifies only as signed: key, body digest, profile', async (t) => {
  const customer = signer(V.org, hexToBytes(V.api_secret_key_hex));
  const lookup = (id: string) => (id === customer.keyId ? hexToBytes(customer.publicKey) : undefined);
  const ok = decodeTrustEntry(signedEntry(customer, 'PUT', '/v1/config/end-user-auth', { audience: 'a', jwks: { keys: [] } })) as RequestEntry;
  t.equal(verifyRequestEntry(ok, lookup).path, '/v1/config/end-user-auth');
  t.throws(() => verifyRequestEntry(ok, () => undefined), /unknown or revoked/, 'unknown key');
  const tampered = decodeTrustEntry(signedEntry(customer, 'POST', '/v1/api-keys', { public_key: 'aa'.repeat(32) }, { tamperBody: new TextEncoder().encode(JSON.stringify({ public_key: 'bb'.repeat(32) })) })) as RequestEntry;
  t.throws(() => verifyRequestEntry(tampered, lookup), /Content-Digest does not match/);
  t.throws(() => verifyRequestEntry({ ...ok, headers: { ...ok.headers, 'content-digest': undefined } as unknown as RequestEntry['headers'] }, lookup), /needs a Content-Digest/);
  t.throws(() => verifyRequestEntry({ ...ok, url: ok.url.replace('custody.test', 'evil.test') }, lookup), /does not verify/, 'the target URI is covered');
  t.throws(() => verifyRequestEntry({ ...ok, method: 'POST' }, lookup), /does not verify/, 'the method is covered');
  // Old requests verify: freshness is judged at their own created time, not this machine's clock.
  const old = decodeTrustEntry(signedEntry(customer, 'POST', '/v1/api-keys/key_x/revoke', undefined, { created: 1_000_000_000 })) as RequestEntry;
  t.equal(verifyRequestEntry(old, lookup).created, 1_000_000_000);
});
