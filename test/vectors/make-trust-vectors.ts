// Writes test/vectors/trust-entries-v1.json: API key ids and trust-log entries (bootstrap and request)
// for fixed inputs. Run once when the format changes on purpose
// (`node --import tsx test/vectors/make-trust-vectors.ts`); the trust-entry test pins them byte for byte.
import { writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { apiKeyId } from '../../core/trust/api-key-id.ts';
import { bootstrapMessage, signBootstrap, trustEntryHash } from '../../core/trust/trust-entry.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const operator = seed('trust vectors operator key');
const customer = signer('org_vectors', seed('trust vectors api key'));
const second = bytesToHex(ed25519.getPublicKey(seed('trust vectors second api key')));
const entries = [
  { name: 'bootstrap', hex: bytesToHex(signBootstrap(customer.org, customer.publicKey, 1_795_000_000, operator)) },
  { name: 'add api key', hex: bytesToHex(signedEntry(customer, 'POST', '/v1/api-keys', { public_key: second, label: 'ci' }, { created: 1_795_000_100, nonce: 'vector-nonce-0001' })) },
  { name: 'revoke api key', hex: bytesToHex(signedEntry(customer, 'POST', `/v1/api-keys/${apiKeyId(customer.org, second)}/revoke`, undefined, { created: 1_795_000_200, nonce: 'vector-nonce-0002' })) },
];
writeFileSync(new URL('./trust-entries-v1.json', import.meta.url), JSON.stringify({
  description: 'Trust-log entries, version 1 (docs/trust.md)',
  operator_secret_key_hex: bytesToHex(operator),
  operator_public_key_hex: bytesToHex(ed25519.getPublicKey(operator)),
  org: customer.org,
  api_secret_key_hex: bytesToHex(customer.secret),
  api_public_key_hex: customer.publicKey,
  api_key_id: customer.keyId,
  second_public_key_hex: second,
  second_key_id: apiKeyId(customer.org, second),
  bootstrap_message_hex: bytesToHex(bootstrapMessage(customer.org, customer.publicKey, 1_795_000_000)),
  entries: entries.map((e) => ({ ...e, hash: trustEntryHash(Buffer.from(e.hex, 'hex')) })),
}, null, 2) + '\n');
