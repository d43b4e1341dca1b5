// Writes test/vectors/intents-v1.json, intents-v2.json, intents-v3.json and intents-v1-safe-tx.json: canonical intent bytes and Ed25519 signatures
// for fixed inputs.
// Run once when the format changes on purpose (`node --import tsx test/vectors/make-intent-vectors.ts`);
// the vectors test then pins the encoding byte for byte.
import { writeFileSync } from 'node:fs';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { encodeIntent, signIntent, type Intent } from '../../core/intents/intent.ts';
import { toHex } from '../../common/bytes.ts';
import { safeTxHash } from '../../core/chains/evm/safe-tx.ts';
import { intentToJson, intentVectorInputs, intentVectorInputsV2, intentVectorInputsV3, intentVectorInputsSafeTx } from './intent-vector-inputs.ts';

const secret = sha256(new TextEncoder().encode('intent vectors api key'));
const files = [
  { file: './intents-v1.json', description: 'Canonical intent bytes, version 1 (docs/intents.md)', inputs: intentVectorInputs() },
  { file: './intents-v2.json', description: 'Canonical intent bytes, version 2: Bitcoin inputs with their amounts (docs/intents.md)', inputs: intentVectorInputsV2() },
  { file: './intents-v3.json', description: 'Canonical intent bytes, version 3: EVM transfers that name their nonce (docs/intents.md)', inputs: intentVectorInputsV3() },
  { file: './intents-v1-safe-tx.json', description: 'Canonical intent bytes, kind 3 (version 1): a Safe owner signature on one SafeTx (docs/intents.md); safe_tx_hash is the EIP-712 digest nodes sign', inputs: intentVectorInputsSafeTx() },
];
for (const f of files) {
  const vectors = f.inputs.map(({ name, intent }: { name: string; intent: Intent }) => {
    const bytes = encodeIntent(intent);
    // A Safe transaction's vector also pins the digest the nodes sign for it.
    const digest = intent.kind === 'evm.safe_tx' ? { safe_tx_hash: toHex(safeTxHash(intent)) } : {};
    return { name, intent: intentToJson(intent), intent_hex: toHex(bytes), signature_hex: toHex(signIntent(bytes, secret)), ...digest };
  });
  writeFileSync(
    new URL(f.file, import.meta.url),
    JSON.stringify({ description: f.description, api_secret_key_hex: toHex(secret), api_public_key_hex: toHex(ed25519.getPublicKey(secret)), vectors }, null, 2) + '\n',
  );
}
