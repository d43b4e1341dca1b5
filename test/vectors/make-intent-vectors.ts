// Writes test/vectors/intents-v1.json, intents-v2.json and intents-v3.json: canonical intent bytes and Ed25519 signatures
// for fixed inputs.
// Run once when the format changes on purpose (`node --import tsx test/vectors/make-intent-vectors.ts`);
// the vectors test then pins the encoding byte for byte.
import { writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { encodeIntent, signIntent, type Intent } from '../../core/intents/intent.ts';
import { toHex } from '../../common/bytes.ts';
import { intentToJson, intentVectorInputs, intentVectorInputsV2, intentVectorInputsV3 } from './intent-vector-inputs.ts';

const secret = sha256(new TextEncoder().encode('intent vectors api key'));
const files = [
  { file: './intents-v1.json', description: 'Canonical intent bytes, version 1 (docs/intents.md)', inputs: intentVectorInputs() },
  { file: './intents-v2.json', description: 'Canonical intent bytes, version 2: Bitcoin inputs with their amounts (docs/intents.md)', inputs: intentVectorInputsV2() },
  { file: './intents-v3.json', description: 'Canonical intent bytes, version 3: EVM transfers that name their nonce (docs/intents.md)', inputs: intentVectorInputsV3() },
];
for (const f of files) {
  const vectors = f.inputs.map(({ name, intent }: { name: string; intent: Intent }) => {
    const bytes = encodeIntent(intent);
    return { name, intent: intentToJson(intent), intent_hex: toHex(bytes), signature_hex: toHex(signIntent(bytes, secret)) };
  });
  writeFileSync(
    new URL(f.file, import.meta.url),
    JSON.stringify({ description: f.description, api_secret_key_hex: toHex(secret), api_public_key_hex: toHex(ed25519.getPublicKey(secret)), vectors }, null, 2) + '\n',
  );
}
