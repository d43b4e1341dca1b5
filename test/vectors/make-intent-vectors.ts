// Writes test/vectors/intents-v1.json: canonical intent bytes and Ed25519 signatures for fixed inputs.
// Run once when the format changes on purpose (`node --import tsx test/vectors/make-intent-vectors.ts`);
// the vectors test then pins the encoding byte for byte.
import { writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { encodeIntent, signIntent, type Intent } from '../../api/intents/intent.ts';
import { toHex } from '../../common/bytes.ts';
import { intentToJson, intentVectorInputs } from './intent-vector-inputs.ts';

const secret = sha256(new TextEncoder().encode('intent vectors api key'));
const vectors = intentVectorInputs().map(({ name, intent }: { name: string; intent: Intent }) => {
  const bytes = encodeIntent(intent);
  return { name, intent: intentToJson(intent), intent_hex: toHex(bytes), signature_hex: toHex(signIntent(bytes, secret)) };
});
writeFileSync(
  new URL('./intents-v1.json', import.meta.url),
  JSON.stringify({ description: 'Canonical intent bytes, version 1 (docs/intents.md)', api_secret_key_hex: toHex(secret), api_public_key_hex: toHex(ed25519.getPublicKey(secret)), vectors }, null, 2) + '\n',
);
