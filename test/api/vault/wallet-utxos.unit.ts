// GET /v1/wallets/{walletId}/utxos: a Bitcoin wallet's unspent outputs with their amounts, read from the
// chain backend (here the Esplora double over HTTP), for the inputs a version-2 intent names. Bad input
// gets its status and code, and reading changes nothing.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { TransactionService } from '../../../api/transactions/transaction-service.ts';
import { EsploraClient } from '../../../api/chains/bitcoin/esplora-client.ts';
import { EsploraDouble } from '../../chains/esplora-double.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

t.test('a wallet\'s unspent outputs, and every way to ask wrongly', async (t) => {
  const esplora = new EsploraDouble();
  await esplora.start();
  t.teardown(() => esplora.stop());
  const client = new EsploraClient(esplora.url);
  const { call, store, creds, vaults } = await vaultApp(t, {
    transactions: (vaults) => new TransactionService({ vaults, hasBackend: (chain) => chain === 'bitcoin-regtest', utxos: (_chain, address) => client.utxos(address) }),
  });
  const v = (await call('POST', '/v1/vaults', { tier: 'hosted' })).json() as VaultRecord;
  const rec = (await store.get<VaultRecord>('vaults', v.id))!;
  await store.put('vaults', v.id, { ...rec, state: 'active', public_key: bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey(), true)), chain_code: bytesToHex(ed25519.utils.randomSecretKey()) });
  const btc = (await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'bitcoin-regtest' })).json() as { id: string; address: string };
  const testnet = (await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'bitcoin-testnet' })).json() as { id: string };
  const evm = (await call('POST', `/v1/vaults/${v.id}/wallets`, { chain: 'evm-local' })).json() as { id: string };
  const a = esplora.fund(btc.address, 70_000n);
  const b = esplora.fund(btc.address, 30_000n);

  const ok = await call('GET', `/v1/wallets/${btc.id}/utxos`);
  t.equal(ok.statusCode, 200);
  const listed = (ok.json().utxos as { txid: string; vout: number; amount: string; confirmed: boolean }[]).sort((x, y) => Number(y.amount) - Number(x.amount));
  t.same(listed, [{ txid: a.txid, vout: 0, amount: '70000', confirmed: true }, { txid: b.txid, vout: 0, amount: '30000', confirmed: true }], 'both outputs with their amounts, as the backend holds them');

  for (const [what, path, status, code] of [
    ['an EVM wallet', `/v1/wallets/${evm.id}/utxos`, 400, 'invalid_request'],
    ['a chain without a backend', `/v1/wallets/${testnet.id}/utxos`, 409, 'conflict'],
    ['an unknown wallet', '/v1/wallets/wal_missing/utxos', 404, 'not_found'],
  ] as const) {
    const r = await call('GET', path);
    t.equal(r.statusCode, status, what);
    t.equal(r.json().code, code, what);
  }

  // Another organization of the same service cannot see the wallet: it does not exist for it.
  const otherSecret = ed25519.utils.randomSecretKey();
  const other = await vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(otherSecret)));
  const foreign = await call('GET', `/v1/wallets/${btc.id}/utxos`, undefined, { keyId: other.key.id, secretKey: otherSecret });
  t.equal(foreign.statusCode, 404, 'another organization gets 404');
  const unsigned = await call('GET', `/v1/wallets/${btc.id}/utxos`, undefined, { ...creds, secretKey: ed25519.utils.randomSecretKey() });
  t.equal(unsigned.statusCode, 401, 'a request signed with another key is refused');

  const again = await call('GET', `/v1/wallets/${btc.id}/utxos`);
  t.same(again.json(), ok.json(), 'reading changed nothing');
  t.equal(esplora.coins.size, 2, 'and spent nothing at the backend');
});
