// Hex is hex in either case (issue 44, "Order of checks"): an intent and its signature sent in upper
// case are accepted, and a retry in lower case is the same request (a replay, not a 409 conflict).
import t from 'tap';
import { randomBytes } from 'node:crypto';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { CustodyClient } from '../../../api/sdk/client.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';
import { injectFetch } from '../../support/inject-fetch.ts';

t.test('upper-case hex in an intent is accepted, and a lower-case retry replays it', async (t) => {
  const a = await vaultApp(t, { transactions: (vaults) => new TransactionService({ vaults, hasBackend: () => true }) });
  const v = await a.vaults.createVault(a.org.id, { tier: 'hosted' });
  const active: VaultRecord = { ...v, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey())), chain_code: bytesToHex(randomBytes(32)) };
  await a.store.batch([a.vaults.vaultOp(active)]);
  const wallet = (await a.vaults.createWallet(a.org.id, v.id, 'evm-local', 0, undefined)).wallet;
  const client = new CustodyClient({ baseUrl: 'http://api.test', organization: a.org.id, keyId: a.creds.keyId, secretKey: a.creds.secretKey, fetch: injectFetch(a.app) });
  const intent = await client.evmIntent({ wallet, to: '0x00000000000000000000000000000000000000B0', amount: 5n, idempotencyKey: 'hex-case', nonce: 0n, notAfter: BigInt(Math.floor(Date.now() / 1000) + 600) });
  const body = { wallet_id: wallet.id, intent: bytesToHex(intent), idempotency_key: 'hex-case', intent_signature: client.signIntent(intent) };
  const upper = await a.call('POST', '/v1/transactions', { ...body, intent: body.intent.toUpperCase(), intent_signature: body.intent_signature.toUpperCase() });
  t.equal(upper.statusCode, 202, upper.body);
  const lower = await a.call('POST', '/v1/transactions', body);
  t.equal(lower.statusCode, 202, lower.body);
  t.equal(lower.headers['idempotent-replayed'], 'true', 'the same request in the other case');
  t.equal(lower.json().id, upper.json().id);
  t.equal((await a.call('GET', '/v1/transactions')).json().data.length, 1, 'one transaction');
});
