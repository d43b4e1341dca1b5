// Shared material for the policy tests: approvers with fixed keys, intents of each kind, a base policy.
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { encodeIntent, type BtcTransferIntent, type EvmTransferIntent, type Intent, type SafeTxIntent } from '../../../core/intents/intent.ts';
import { parsePolicyDocument, type PolicyDocument } from '../../../core/policy/policy-document.ts';
import { intentApprovalMessage, signApproval, type Approval } from '../../../core/policy/policy-approval.ts';

export const seed = (s: string) => sha256(new TextEncoder().encode(s));

export interface ApproverKey {
  id: string;
  secret: Uint8Array;
  publicKey: string;
}

export const approver = (id: string): ApproverKey => {
  const secret = seed(`approver ${id}`);
  return { id, secret, publicKey: bytesToHex(ed25519.getPublicKey(secret)) };
};

export const alice = approver('alice');
export const bob = approver('bob');
export const carol = approver('carol');
export const mallory = approver('mallory');

export const VAULT = 'vault_policy';
export const ORG = 'org_policy';
export const NATIVE = 'eip155:1:native';
export const TOKEN = `0x${'70'.repeat(20)}`;
export const TOKEN_ASSET = `eip155:1:${TOKEN}`;
export const BOB_ADDR = `0x${'b0'.repeat(20)}`;
export const EVE_ADDR = `0x${'e0'.repeat(20)}`;
export const NOW = 1_795_100_000;

export function policy(over: Record<string, unknown> = {}): PolicyDocument {
  return parsePolicyDocument({
    format: 1, version: 1, vault_id: VAULT,
    approvers: [alice, bob, carol].map((a) => ({ id: a.id, public_key: a.publicKey })),
    ...over,
  });
}

let n = 0;
export function evm(over: Partial<EvmTransferIntent> = {}): EvmTransferIntent {
  return {
    kind: 'evm.transfer', organization: ORG, walletId: 'w', chainId: 1n, nonce: BigInt(n), from: new Uint8Array(20).fill(0xaa), to: hexToBytes(BOB_ADDR.slice(2)),
    asset: { kind: 'native' }, amount: 1000n, data: new Uint8Array(), maxFee: 10n ** 16n, idempotencyKey: `k-${++n}`, notAfter: BigInt(NOW + 600), ...over,
  };
}

export function btc(over: Partial<BtcTransferIntent> = {}): BtcTransferIntent {
  return {
    kind: 'btc.transfer', organization: ORG, walletId: 'w', network: 'regtest', from: 'bcrt1qfromaddressxxxxxxxxxxxx', outputs: [{ address: 'bcrt1qtoaddressxxxxxxxxxxxxxx', amount: 5000n }],
    maxFeeRate: 10n, maxFee: 10_000n, inputs: [], idempotencyKey: `b-${++n}`, notAfter: BigInt(NOW + 600), ...over,
  };
}

export function safeTx(over: Partial<SafeTxIntent> = {}): SafeTxIntent {
  const z = new Uint8Array(20);
  return {
    kind: 'evm.safe_tx', organization: ORG, walletId: 'w', chainId: 1n, owner: new Uint8Array(20).fill(0xaa), safe: new Uint8Array(20).fill(0x5a), to: hexToBytes(TOKEN.slice(2)),
    value: 0n, data: hexToBytes('40c10f19'), operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: z, refundReceiver: z, safeNonce: 0n,
    idempotencyKey: `s-${++n}`, notAfter: BigInt(NOW + 600), ...over,
  };
}

export const intentHash = (i: Intent) => bytesToHex(sha256(encodeIntent(i)));

/** ERC-20 calldata: transfer or approve (selector hex without 0x), to, amount. */
export function erc20Data(selector: 'a9059cbb' | '095ea7b3', to: string, amount: bigint): Uint8Array {
  return hexToBytes(selector + to.slice(2).padStart(64, '0') + amount.toString(16).padStart(64, '0'));
}

export const approve = (a: ApproverKey, i: Intent, version = 1, vault = VAULT): Approval => signApproval(a.id, intentApprovalMessage(vault, version, intentHash(i)), a.secret);
