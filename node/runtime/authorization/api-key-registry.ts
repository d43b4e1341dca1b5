// The operator's bootstrap file of API keys (NODE_API_KEYS_FILE): organizations the node trusts from
// configuration rather than from an operator-signed trust log (docs/trust.md). Read once at start; the
// trust registry lays what the logs change (registrations, revocations) over it.
import { readFileSync } from 'node:fs';

const ORG = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;
const KEY_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

export type ApiKeysFile = Record<string, Record<string, string>>;

/** File format: { "<organization>": { "<api key id>": "<32-byte Ed25519 public key hex>" } }. */
export function parseApiKeys(data: unknown): ApiKeysFile {
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw new Error('API keys file: expected an object of organizations');
  const out: ApiKeysFile = {};
  for (const [org, keys] of Object.entries(data)) {
    if (!ORG.test(org)) throw new Error(`API keys file: ${org} is not a valid organization id`);
    if (typeof keys !== 'object' || keys === null || Array.isArray(keys)) throw new Error(`API keys file: ${org}: expected an object of keys`);
    out[org] = {};
    for (const [id, hex] of Object.entries(keys as Record<string, unknown>)) {
      if (!KEY_ID.test(id)) throw new Error(`API keys file: ${org}: ${id} is not a valid key id`);
      if (typeof hex !== 'string' || !/^[0-9a-f]{64}$/i.test(hex)) throw new Error(`API key ${id} of ${org}: expected 32-byte hex`);
      out[org][id] = hex.toLowerCase();
    }
  }
  return out;
}

export function loadApiKeysFile(path: string | undefined): ApiKeysFile {
  return path ? parseApiKeys(JSON.parse(readFileSync(path, 'utf8'))) : {};
}
