// What the node-side member-action tests share (member-action-authorizer.unit.ts, member-passkey.unit.ts):
// an organization rooted by an operator key, an EVM transfer request signed with its API key for a hosted
// vault bound to `member-7`, and a node's IntentAuthorizer whose trust registry holds the organization's
// end-user-auth registration (the identity key the test signs proofs with).
import type { Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { exportJWK, generateKeyPair } from 'jose';
import { toHex as viemHex } from 'viem';
import { publicKeyToAddress } from 'viem/utils';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { encodeIntent, signIntent, type EvmTransferIntent } from '../../core/intents/intent.ts';
import { evmSigningDigest, evmTransaction } from '../../core/chains/evm/evm-transaction.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import type { MemberActionBinding } from '../../core/auth/member-action.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { IntentAuthorizer, type SignRequestView } from '../../node/runtime/authorization/sign-authorizer.ts';
import { SessionRefused } from '../../node/runtime/session-host.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
export const NOW = 1_795_100_000_000;
export const now = NOW / 1000;

export const newBinding = (): MemberActionBinding => ({ actionId: `mac_${randomBytes(32).toString('base64url')}`, salt: new Uint8Array(randomBytes(32)) });
export const refusal = (code: string) => ({ constructor: SessionRefused, code });

export function memberOrganization(org: string) {
  const operator = seed(`${org} operator`);
  const first = signer(org, seed(`${org} first`));
  const bootstrap = signBootstrap(org, first.publicKey, 1_795_000_000, operator);
  const groupSecret = seed(`${org} group key`);
  const groupKey = bytesToHex(secp256k1.getPublicKey(groupSecret, true));
  let n = 0;

  /** A signing request for a fresh native transfer of the vault's key, bound to `member-7`. */
  function request(over: Partial<SignRequestView> = {}): SignRequestView {
    const from = publicKeyToAddress(viemHex(secp256k1.getPublicKey(groupSecret, false)));
    const fields: EvmTransferIntent = {
      kind: 'evm.transfer', organization: org, walletId: 'w', chainId: 1n, nonce: 0n, from: hexToBytes(from.slice(2)), to: new Uint8Array(20).fill(0xb0),
      asset: { kind: 'native' }, amount: 1000n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `m-${++n}`, notAfter: BigInt(now + 600),
    };
    const intent = encodeIntent(fields);
    return {
      path: [], scheme: 'ecdsa', digests: [evmSigningDigest(evmTransaction(fields, { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n ** 9n, maxPriorityFeePerGas: 1n }))],
      intent, intentSignature: signIntent(intent, first.secret), apiKeyId: first.keyId,
      template: encodeBlob('evm-template', { nonce: 0, gasLimit: '21000', maxFeePerGas: String(10n ** 9n), maxPriorityFeePerGas: '1' }),
      endUserToken: '', owner: org, groupKey, chainCode: '00'.repeat(32), endUser: { required: true, subject: 'member-7' }, ...over,
    };
  }

  /**
   * A node's authorizer (its clock at NOW) that holds the organization's end-user auth: a fresh `alg` key
   * of the identity provider (kid `kid`) and `audience`. Returns the key pair to sign proofs with.
   */
  async function authorizer(t: Test, alg: 'RS256' | 'ES256', kid: string, audience: string, registration: Record<string, unknown> = {}) {
    const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'member-authz-')), new Uint8Array(32).fill(7));
    t.teardown(() => store.close());
    const trust = new TrustRegistry(store, { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))] });
    const idp = await generateKeyPair(alg);
    const jwk = { ...(await exportJWK(idp.publicKey)), kid, alg };
    const entries = [bootstrap, signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [jwk] }, audience, ...registration })];
    await trust.apply(org, entries);
    /** Applies a later end-user-auth registration signed by the organization's key (`registration` beside the same JWKS and audience). */
    const register = async (next: Record<string, unknown>) => {
      entries.push(signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [jwk] }, audience, ...next }));
      await trust.apply(org, entries);
    };
    return { authorizer: new IntentAuthorizer(trust, () => NOW), idp, trust, register };
  }

  return { request, authorizer };
}
