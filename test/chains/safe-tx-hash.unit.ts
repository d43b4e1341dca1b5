// The SafeTx EIP-712 digest (core/chains/evm/safe-tx.ts) against implementations not written here: the
// type hashes are Safe 1.4.1's own constants (safe-smart-account `Safe.sol` SAFE_TX_TYPEHASH and
// DOMAIN_SEPARATOR_TYPEHASH), and every digest equals @safe-global/protocol-kit's
// `calculateSafeTransactionHash` for Safe 1.4.1, on the published vectors and on random transactions.
import t from 'tap';
import { readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { calculateSafeTransactionHash } from '@safe-global/protocol-kit';
import { keccak256, toHex as viemHex, getAddress } from 'viem';
import { SAFE_DOMAIN_TYPEHASH, SAFE_TX_TYPEHASH, safeOperationProblem, safeTxHash, SAFE_DELEGATECALL_TARGETS, type SafeTxFields } from '../../core/chains/evm/safe-tx.ts';
import { decodeIntent, type SafeTxIntent } from '../../core/intents/intent.ts';
import { fromHex, toHex } from '../../common/bytes.ts';
import { previewIntent } from '../../api/sdk/intent-preview.ts';

const typeHash = (s: string) => keccak256(new TextEncoder().encode(s));

/** protocol-kit's digest of the same transaction, Safe 1.4.1. */
function theirs(tx: SafeTxFields): string {
  return calculateSafeTransactionHash(getAddress(viemHex(tx.safe)), {
    to: getAddress(viemHex(tx.to)), value: tx.value.toString(), data: viemHex(tx.data), operation: tx.operation, safeTxGas: tx.safeTxGas.toString(),
    baseGas: tx.baseGas.toString(), gasPrice: tx.gasPrice.toString(), gasToken: getAddress(viemHex(tx.gasToken)), refundReceiver: getAddress(viemHex(tx.refundReceiver)), nonce: Number(tx.safeNonce),
  } as never, '1.4.1', tx.chainId);
}

t.test('the type hashes are Safe 1.4.1\'s', async (t) => {
  t.equal(typeHash('SafeTx(address to,uint256 value,bytes data,uint8 operation,uint256 safeTxGas,uint256 baseGas,uint256 gasPrice,address gasToken,address refundReceiver,uint256 nonce)'), SAFE_TX_TYPEHASH);
  t.equal(typeHash('EIP712Domain(uint256 chainId,address verifyingContract)'), SAFE_DOMAIN_TYPEHASH);
});

t.test('the published vectors\' digests are protocol-kit\'s', async (t) => {
  const file = JSON.parse(readFileSync(new URL('../vectors/intents-v1-safe-tx.json', import.meta.url), 'utf8')) as { vectors: { name: string; intent_hex: string; safe_tx_hash: string }[] };
  for (const v of file.vectors) {
    const intent = decodeIntent(fromHex(v.intent_hex)) as SafeTxIntent;
    // protocol-kit carries the nonce as a JavaScript number: compare the vectors whose nonce fits one.
    if (intent.safeNonce > BigInt(Number.MAX_SAFE_INTEGER)) {
      t.equal(toHex(safeTxHash(intent)), v.safe_tx_hash, `${v.name}: pinned`);
      continue;
    }
    t.equal(`0x${v.safe_tx_hash}`, theirs(intent), v.name);
    // What a customer's dry run shows is the digest the nodes sign.
    const preview = previewIntent(fromHex(v.intent_hex));
    t.equal(preview.decoded.safe_tx_hash, `0x${v.safe_tx_hash}`, `${v.name}: the preview names the digest`);
    t.match(preview.signing.nodes, /nothing is broadcast/);
  }
});

t.test('random Safe transactions hash as protocol-kit hashes them', async (t) => {
  const a = () => new Uint8Array(randomBytes(20));
  const u = (bytes: number) => BigInt(`0x${randomBytes(bytes).toString('hex')}`);
  for (let i = 0; i < 40; i++) {
    const tx: SafeTxFields = {
      chainId: [1n, 31337n, 11155111n, 2n ** 40n + 3n][i % 4]!, safe: a(), to: a(), value: u(i % 32 + 1), data: new Uint8Array(randomBytes(i * 37 % 300)), operation: i % 2,
      safeTxGas: u(4), baseGas: u(3), gasPrice: u(8), gasToken: i % 3 ? new Uint8Array(20) : a(), refundReceiver: i % 5 ? new Uint8Array(20) : a(), safeNonce: BigInt(i * 1009),
    };
    t.equal(viemHex(safeTxHash(tx)), theirs(tx), `transaction ${i}`);
  }
});

t.test('a delegatecall is signed only into MultiSendCallOnly', async (t) => {
  const multiSend = fromHex(SAFE_DELEGATECALL_TARGETS[0]!.slice(2));
  const other = new Uint8Array(20).fill(7);
  t.equal(safeOperationProblem({ operation: 0, to: other }), undefined, 'a call to anything');
  t.equal(safeOperationProblem({ operation: 1, to: multiSend }), undefined, 'a delegatecall to MultiSendCallOnly');
  t.match(safeOperationProblem({ operation: 1, to: other }), /MultiSendCallOnly/, 'a delegatecall elsewhere');
  // MultiSend (not CallOnly) lets each batched step delegatecall again: refused.
  t.match(safeOperationProblem({ operation: 1, to: fromHex('38869bf66a61cf6bdb996a6ae40d5853fd43b526') }), /MultiSendCallOnly/, 'MultiSend 1.4.1 itself');
  t.match(safeOperationProblem({ operation: 2, to: other }), /neither/);
});
