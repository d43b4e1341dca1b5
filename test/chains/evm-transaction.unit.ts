// The EIP-1559 digest we compute from an intent is the one a real EVM node accepts: sign it with a
// plain key, broadcast to anvil, and the recipient is credited exactly the amount from our address.
import t from 'tap';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { privateKeyToAccount } from 'viem/accounts';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { hexToBytes, parseEther, recoverTransactionAddress, serializeTransaction, toHex as viemHex } from 'viem';
import { evmSignedTransaction, evmSigningDigest, evmTransaction, EvmTemplateError } from '../../core/chains/evm/evm-transaction.ts';
import type { EvmTransferIntent } from '../../core/intents/intent.ts';
import { startAnvil } from './anvil.ts';

const secret = sha256(new TextEncoder().encode('evm transaction test key'));
const account = privateKeyToAccount(viemHex(secret));
const recipient = hexToBytes('0x00000000000000000000000000000000000a11ce');

function intent(over: Partial<EvmTransferIntent> = {}): EvmTransferIntent {
  return {
    kind: 'evm.transfer', organization: 'org_test', walletId: 'wal_1', chainId: 31337n, from: hexToBytes(account.address), to: recipient,
    asset: { kind: 'native' }, amount: parseEther('1.25'), data: new Uint8Array(), maxFee: parseEther('0.01'), idempotencyKey: 'k1', notAfter: 0n, ...over,
  };
}

t.test('a digest-signed native transfer is accepted by anvil and credits the exact amount', async (t) => {
  const anvil = await startAnvil();
  t.teardown(() => anvil.stop());
  await anvil.testClient.setBalance({ address: account.address, value: parseEther('10') });
  const fees = await anvil.publicClient.estimateFeesPerGas();
  const nonce = await anvil.publicClient.getTransactionCount({ address: account.address });
  const tx = evmTransaction(intent(), { nonce, gasLimit: 21_000n, maxFeePerGas: fees.maxFeePerGas, maxPriorityFeePerGas: fees.maxPriorityFeePerGas });
  const digest = evmSigningDigest(tx);
  const sig = secp256k1.Signature.fromBytes(secp256k1.sign(digest, secret, { prehash: false, format: 'recovered' }), 'recovered');
  const raw = evmSignedTransaction(tx, { r: sig.r, s: sig.s, recovery: sig.recovery! });
  t.equal(await recoverTransactionAddress({ serializedTransaction: raw as `0x02${string}` }), account.address, 'viem recovers the sender');

  const before = await anvil.publicClient.getBalance({ address: viemHex(recipient) });
  const hash = await anvil.publicClient.sendRawTransaction({ serializedTransaction: raw });
  const receipt = await anvil.publicClient.waitForTransactionReceipt({ hash });
  t.equal(receipt.status, 'success');
  t.equal(receipt.from.toLowerCase(), account.address.toLowerCase());
  t.equal((await anvil.publicClient.getBalance({ address: viemHex(recipient) })) - before, parseEther('1.25'), 'credited exactly the amount');
});

t.test('ERC-20 intents become transfer(to, amount) calls to the contract', async (t) => {
  const contract = hexToBytes('0x00000000000000000000000000000000000c0de0');
  const tx = evmTransaction(intent({ asset: { kind: 'erc20', contract }, amount: 5n }), { nonce: 0, gasLimit: 60_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 1n });
  t.equal(tx.to, viemHex(contract));
  t.equal(tx.value, 0n);
  t.equal(tx.data, '0xa9059cbb' + '0'.repeat(24) + '00000000000000000000000000000000000a11ce' + '0'.repeat(63) + '5');
});

t.test('templates outside the intent are refused', async (t) => {
  t.throws(() => evmTransaction(intent({ maxFee: 21_000n * 10n - 1n }), { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }), EvmTemplateError, 'over the fee ceiling');
  t.throws(() => evmTransaction(intent(), { nonce: -1, gasLimit: 21_000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }), EvmTemplateError);
  t.throws(() => evmTransaction(intent(), { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 1n, maxPriorityFeePerGas: 2n }), EvmTemplateError);
  const a = evmSigningDigest(evmTransaction(intent(), { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }));
  const b = evmSigningDigest(evmTransaction(intent({ amount: parseEther('1.26') }), { nonce: 0, gasLimit: 21_000n, maxFeePerGas: 10n, maxPriorityFeePerGas: 1n }));
  t.not(viemHex(a), viemHex(b), 'the amount is bound into the digest');
});

// An RLP encoder written from the Yellow Paper (appendix B), independent of viem: a byte string of one
// byte below 0x80 is itself, otherwise a length prefix; a list prefixes its concatenated items.
type RlpItem = Uint8Array | RlpItem[];
function rlp(item: RlpItem): Uint8Array {
  const prefix = (len: number, short: number) => {
    if (len < 56) return [short + len];
    const l: number[] = [];
    for (let n = len; n > 0; n = Math.floor(n / 256)) l.unshift(n % 256);
    return [short + 55 + l.length, ...l];
  };
  if (item instanceof Uint8Array) return item.length === 1 && item[0]! < 0x80 ? item : Uint8Array.from([...prefix(item.length, 0x80), ...item]);
  const body = item.flatMap((i) => [...rlp(i)]);
  return Uint8Array.from([...prefix(body.length, 0xc0), ...body]);
}
const int = (n: bigint) => {
  const out: number[] = [];
  for (let x = n; x > 0n; x >>= 8n) out.unshift(Number(x & 0xffn));
  return Uint8Array.from(out);
};

t.test('a chain id above 2^53 is signed for exactly, not for a rounded id', async (t) => {
  const chainId = 2n ** 53n + 1n;
  t.ok(chainId > BigInt(Number.MAX_SAFE_INTEGER) && BigInt(Number(chainId)) !== chainId, 'the id does not survive Number()');
  const template = { nonce: 9, gasLimit: 21_000n, maxFeePerGas: 30n * 10n ** 9n, maxPriorityFeePerGas: 10n ** 9n };
  const tx = evmTransaction(intent({ chainId }), template);
  const payload = rlp([int(chainId), int(9n), int(template.maxPriorityFeePerGas), int(template.maxFeePerGas), int(template.gasLimit), recipient, int(parseEther('1.25')), new Uint8Array(), []]);
  const expected = keccak_256(Uint8Array.from([0x02, ...payload]));
  t.equal(bytesToHex(evmSigningDigest(tx)), bytesToHex(expected), 'keccak256(0x02 ‖ rlp([...])) with the exact chain id');
  const rounded = rlp([int(BigInt(Number(chainId))), int(9n), int(template.maxPriorityFeePerGas), int(template.maxFeePerGas), int(template.gasLimit), recipient, int(parseEther('1.25')), new Uint8Array(), []]);
  t.not(bytesToHex(evmSigningDigest(tx)), bytesToHex(keccak_256(Uint8Array.from([0x02, ...rounded]))), 'not the digest of the rounded id');
  // The largest chain id an intent can carry (u64).
  const max = 2n ** 64n - 1n;
  const big = evmTransaction(intent({ chainId: max }), template);
  const bigPayload = rlp([int(max), int(9n), int(template.maxPriorityFeePerGas), int(template.maxFeePerGas), int(template.gasLimit), recipient, int(parseEther('1.25')), new Uint8Array(), []]);
  t.equal(bytesToHex(evmSigningDigest(big)), bytesToHex(keccak_256(Uint8Array.from([0x02, ...bigPayload]))));
});

t.test('for ordinary chain ids the serialization is viem\'s, unsigned and signed', async (t) => {
  const template = { nonce: 0, gasLimit: 60_000n, maxFeePerGas: 7n, maxPriorityFeePerGas: 0n };
  for (const over of [{}, { data: Uint8Array.from([1, 2, 3]) }, { asset: { kind: 'erc20' as const, contract: hexToBytes('0x00000000000000000000000000000000000c0de0') }, amount: 0n }]) {
    const tx = evmTransaction(intent(over), template);
    const viemTx = { ...tx, chainId: Number(tx.chainId) };
    t.equal(viemHex(evmSigningDigest(tx)), viemHex(keccak_256(hexToBytes(serializeTransaction(viemTx)))));
    const sig = { r: 2n ** 255n + 5n, s: 77n, recovery: 1 };
    t.equal(evmSignedTransaction(tx, sig), serializeTransaction(viemTx, { r: viemHex(sig.r, { size: 32 }), s: viemHex(sig.s, { size: 32 }), yParity: 1 }));
  }
});
