// The organizations' Ed25519 API keys this node trusts to sign intents. It starts from a bootstrap set
// the operator installs (NODE_API_KEYS_FILE) and is kept in the node's store.
import { readFileSync } from 'node:fs';

export interface ApiKeyEntry {
  publicKey: Uint8Array;
  revoked: boolean;
}

export class ApiKeyRegistry {
  private readonly orgs = new Map<string, Map<string, ApiKeyEntry>>();

  /** File format: { "<organization>": { "<api key id>": "<32-byte Ed25519 public key hex>" } }. */
  static fromFile(path: string | undefined): ApiKeyRegistry {
    const r = new ApiKeyRegistry();
    if (!path) return r;
    const data = JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, string>>;
    for (const [org, keys] of Object.entries(data)) for (const [id, hex] of Object.entries(keys)) r.add(org, id, hex);
    return r;
  }

  add(org: string, keyId: string, publicKeyHex: string): void {
    if (!/^[0-9a-f]{64}$/i.test(publicKeyHex)) throw new Error(`API key ${keyId} of ${org}: expected 32-byte hex`);
    const m = this.orgs.get(org) ?? new Map<string, ApiKeyEntry>();
    m.set(keyId, { publicKey: new Uint8Array(Buffer.from(publicKeyHex, 'hex')), revoked: false });
    this.orgs.set(org, m);
  }

  revoke(org: string, keyId: string): void {
    const e = this.orgs.get(org)?.get(keyId);
    if (e) e.revoked = true;
  }

  /** The active key, or undefined when unknown or revoked. */
  active(org: string, keyId: string): Uint8Array | undefined {
    const e = this.orgs.get(org)?.get(keyId);
    return e && !e.revoked ? e.publicKey : undefined;
  }
}
