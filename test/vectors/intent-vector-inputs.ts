// Fixed inputs of the intent vectors, and their JSON form (amounts as decimal strings, bytes as hex).
import type { Intent } from '../../core/intents/intent.ts';
import { fromHex, toHex } from '../../common/bytes.ts';

export function intentVectorInputs(): { name: string; intent: Intent }[] {
  const addr = (h: string) => fromHex(h.repeat(20).slice(0, 40));
  return [
    {
      name: 'evm native transfer',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_01', chainId: 31337n, from: addr('a1'), to: addr('b2'),
        asset: { kind: 'native' }, amount: 1_000_000_000_000_000_000n, data: new Uint8Array(), maxFee: 2_000_000_000_000_000n,
        idempotencyKey: 'pay-0001', notAfter: 0n,
      },
    },
    {
      name: 'evm erc20 transfer with expiry',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_01', chainId: 11155111n, from: addr('a1'), to: addr('c3'),
        asset: { kind: 'erc20', contract: addr('d4') }, amount: 2500000n, data: new Uint8Array(), maxFee: 10n ** 16n,
        idempotencyKey: 'invoice/2026-11/77', notAfter: 1795000000n,
      },
    },
    {
      name: 'evm contract call with calldata',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_02', chainId: 1n, from: addr('a1'), to: addr('e5'),
        asset: { kind: 'native' }, amount: 0n, data: fromHex('a9059cbb0000000000000000000000000000000000000000000000000000000000000001'),
        maxFee: 5n * 10n ** 15n, idempotencyKey: 'call-1', notAfter: 0n,
      },
    },
    {
      name: 'btc transfer, service-selected inputs',
      intent: {
        kind: 'btc.transfer', organization: 'org_acme', walletId: 'wal_btc', network: 'regtest', from: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        outputs: [{ address: 'bcrt1q9vza2e8x573nczrlzms0wvx3gsqjx7vaxwd45v', amount: 150_000n }], maxFeeRate: 25n, maxFee: 10_000n,
        inputs: [], idempotencyKey: 'btc-0001', notAfter: 0n,
      },
    },
    {
      name: 'btc transfer, explicit inputs, two outputs',
      intent: {
        kind: 'btc.transfer', organization: 'org_acme', walletId: 'wal_btc', network: 'testnet', from: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx',
        outputs: [
          { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7', amount: 70_000n },
          { address: 'tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c', amount: 30_000n },
        ],
        maxFeeRate: 10n, maxFee: 5_000n,
        inputs: [{ txid: fromHex('f'.repeat(64)), vout: 1 }, { txid: fromHex('0123456789abcdef'.repeat(4)), vout: 0 }],
        idempotencyKey: 'btc-0002', notAfter: 1800000000n,
      },
    },
  ];
}

/** Version 2: Bitcoin transfers whose named inputs carry their amounts (what a P2WPKH spend needs). */
export function intentVectorInputsV2(): { name: string; intent: Intent }[] {
  return [
    {
      name: 'btc p2wpkh transfer, inputs with amounts',
      intent: {
        kind: 'btc.transfer', organization: 'org_acme', walletId: 'wal_btc', network: 'regtest', from: 'bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080',
        outputs: [{ address: 'bcrt1q9vza2e8x573nczrlzms0wvx3gsqjx7vaxwd45v', amount: 150_000n }], maxFeeRate: 25n, maxFee: 10_000n,
        inputs: [{ txid: fromHex('ab'.repeat(32)), vout: 0, amount: 100_000n }, { txid: fromHex('cd'.repeat(32)), vout: 3, amount: 60_000n }],
        idempotencyKey: 'btc-v2-0001', notAfter: 1795003600n,
      },
    },
    {
      name: 'btc p2tr transfer, one input with its amount, two outputs',
      intent: {
        kind: 'btc.transfer', organization: 'org_acme', walletId: 'wal_btc', network: 'testnet', from: 'tb1pqqqqp399et2xygdj5xreqhjjvcmzhxw4aywxecjdzew6hylgvsesf3hn0c',
        outputs: [
          { address: 'tb1qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q0sl5k7', amount: 70_000n },
          { address: 'tb1qw508d6qejxtdg4y5r3zarvary0c5xw7kxpjzsx', amount: 30_000n },
        ],
        maxFeeRate: 10n, maxFee: 5_000n,
        inputs: [{ txid: fromHex('0123456789abcdef'.repeat(4)), vout: 1, amount: 2_100_000_000_000_000n }],
        idempotencyKey: 'btc-v2-0002', notAfter: 1800000000n,
      },
    },
  ];
}

/** Version 3: EVM transfers that name their nonce (what nodes sign; docs/intents.md). */
export function intentVectorInputsV3(): { name: string; intent: Intent }[] {
  const addr = (h: string) => fromHex(h.repeat(20).slice(0, 40));
  return [
    {
      name: 'evm native transfer at nonce 7',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_01', chainId: 31337n, nonce: 7n, from: addr('a1'), to: addr('b2'),
        asset: { kind: 'native' }, amount: 1_000_000_000_000_000_000n, data: new Uint8Array(), maxFee: 2_000_000_000_000_000n,
        idempotencyKey: 'pay-v3-0001', notAfter: 1795003600n,
      },
    },
    {
      name: 'evm erc20 transfer at nonce 0',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_01', chainId: 11155111n, nonce: 0n, from: addr('a1'), to: addr('c3'),
        asset: { kind: 'erc20', contract: addr('d4') }, amount: 2500000n, data: new Uint8Array(), maxFee: 10n ** 16n,
        idempotencyKey: 'invoice/2026-12/7', notAfter: 1800000000n,
      },
    },
    {
      name: 'evm contract call at the largest nonce',
      intent: {
        kind: 'evm.transfer', organization: 'org_acme', walletId: 'wal_02', chainId: 1n, nonce: 2n ** 64n - 2n, from: addr('a1'), to: addr('e5'),
        asset: { kind: 'native' }, amount: 0n, data: fromHex('a9059cbb0000000000000000000000000000000000000000000000000000000000000001'),
        maxFee: 5n * 10n ** 15n, idempotencyKey: 'call-v3-1', notAfter: 1800000000n,
      },
    },
  ];
}

/** Kind 3, version 1: a Safe owner's signature on one SafeTx (docs/intents.md "Kind 3"). */
export function intentVectorInputsSafeTx(): { name: string; intent: Intent }[] {
  const addr = (h: string) => fromHex(h.repeat(20).slice(0, 40));
  const zero = new Uint8Array(20);
  return [
    {
      name: 'safe tx: a token mint call at Safe nonce 0',
      intent: {
        kind: 'evm.safe_tx', organization: 'org_acme', walletId: 'wal_01', chainId: 31337n, owner: addr('a1'), safe: addr('5a'), to: addr('70'), value: 0n,
        data: fromHex('40c10f19000000000000000000000000b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b200000000000000000000000000000000000000000000000000000000000003e8'),
        operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: zero, refundReceiver: zero, safeNonce: 0n,
        idempotencyKey: 'safe-mint-0001', notAfter: 1795003600n,
      },
    },
    {
      name: 'safe tx: native value, gas refund fields, a large Safe nonce',
      intent: {
        kind: 'evm.safe_tx', organization: 'org_acme', walletId: 'wal_02', chainId: 11155111n, owner: addr('a1'), safe: addr('5b'), to: addr('c3'), value: 10n ** 17n,
        data: new Uint8Array(), operation: 0, safeTxGas: 50_000n, baseGas: 21_000n, gasPrice: 10n ** 9n, gasToken: addr('d4'), refundReceiver: addr('e5'), safeNonce: 2n ** 255n + 7n,
        idempotencyKey: 'safe-pay/2026-12/1', notAfter: 1800000000n,
      },
    },
    {
      name: 'safe tx: a batch by delegatecall to MultiSendCallOnly',
      intent: {
        kind: 'evm.safe_tx', organization: 'org_acme', walletId: 'wal_01', chainId: 1n, owner: addr('a1'), safe: addr('5a'), to: fromHex('9641d764fc13c8b624c04430c7356c1c7c8102e2'), value: 0n,
        data: fromHex('8d80ff0a'), operation: 1, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: zero, refundReceiver: zero, safeNonce: 12n,
        idempotencyKey: 'safe-batch-12', notAfter: 1800000000n,
      },
    },
  ];
}

export function intentToJson(i: Intent): Record<string, unknown> {
  return JSON.parse(JSON.stringify(i, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? toHex(v) : v))) as Record<string, unknown>;
}
