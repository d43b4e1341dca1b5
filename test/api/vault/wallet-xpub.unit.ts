// Addresses a customer can verify (docs/derivation.md "Verifying addresses"): every wallet address the
// API answers is re-derived from the vault's returned xpub and the wallet's derivation_path with
// standard libraries only (@scure/bip32, viem, bitcoinjs-lib), none of the service's derivation code.
import t from 'tap';
import { HDKey } from '@scure/bip32';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { bytesToHex, randomBytes } from '@noble/hashes/utils.js';
import { vaultApp } from './vault-app.ts';
import { extendedPublicKey } from '../../../api/vaults/extended-key.ts';
import { addressFromXpub, TESTNET, type WalletView } from './xpub-addresses.ts';

t.test('the xpub is BIP-32 serialization of the root: tpub in sandbox, xpub in production, as @scure/bip32 writes it', async (t) => {
  for (let i = 0; i < 8; i++) {
    const publicKey = secp256k1.getPublicKey(secp256k1.utils.randomSecretKey());
    const chainCode = randomBytes(32);
    const production = extendedPublicKey(bytesToHex(publicKey), bytesToHex(chainCode), 'production');
    const sandbox = extendedPublicKey(bytesToHex(publicKey), bytesToHex(chainCode), 'sandbox');
    t.equal(production, new HDKey({ publicKey, chainCode }).publicExtendedKey, 'production: the library\'s own xpub');
    t.equal(sandbox, new HDKey({ publicKey, chainCode, versions: TESTNET }).publicExtendedKey, 'sandbox: the library\'s own tpub');
    t.match(production, /^xpub/);
    t.match(sandbox, /^tpub/);
    const parsed = HDKey.fromExtendedKey(sandbox, TESTNET);
    t.same([parsed.depth, parsed.index, parsed.parentFingerprint], [0, 0, 0], 'the root: depth 0, child 0, no parent');
    t.equal(bytesToHex(parsed.chainCode!), bytesToHex(chainCode));
  }
  t.throws(() => extendedPublicKey('02' + '00'.repeat(32), '00'.repeat(32), 'sandbox'), { code: 'bad_point' }, 'a key off the curve is refused');
});

t.test('every wallet address re-derives from the vault\'s xpub and the wallet\'s path', async (t) => {
  const a = await vaultApp(t);
  const created = (await a.call('POST', '/v1/vaults', { tier: 'hosted', name: 'verify-me' })).json() as { id: string; xpub: string | null };
  t.equal(created.xpub, null, 'no xpub before the key exists');

  // The key as key generation leaves it: a group key and a joint chain code, both random here.
  const publicKey = bytesToHex(secp256k1.getPublicKey(secp256k1.utils.randomSecretKey()));
  const chainCode = bytesToHex(randomBytes(32));
  await a.store.batch([a.vaults.vaultOp({ ...(await a.vaults.vault(a.org.id, created.id)), state: 'active', public_key: publicKey, chain_code: chainCode })]);
  const vault = (await a.call('GET', `/v1/vaults/${created.id}`)).json() as { public_key: string; xpub: string };
  t.match(vault.xpub, /^tpub/, 'sandbox answers a tpub');
  const root = HDKey.fromExtendedKey(vault.xpub, TESTNET);
  t.equal(bytesToHex(root.publicKey!), vault.public_key, 'whose key is the vault\'s public key');
  t.equal(bytesToHex(root.chainCode!), chainCode, 'and whose chain code is the vault\'s');
  t.same((await a.call('GET', '/v1/vaults')).json().data[0].xpub, vault.xpub, 'the list shows it too');

  const asked = [
    { chain: 'evm-local' }, { chain: 'evm-local', account_index: 7 }, { chain: 'ethereum-sepolia', account_index: 2_147_483_647 },
    { chain: 'bitcoin-regtest' }, { chain: 'bitcoin-regtest', address_type: 'p2tr' }, { chain: 'bitcoin-testnet', address_type: 'p2tr', account_index: 3 },
    { chain: 'bitcoin-signet', address_type: 'p2wpkh', account_index: 1 },
  ];
  for (const body of asked) {
    const res = await a.call('POST', `/v1/vaults/${created.id}/wallets`, body);
    t.equal(res.statusCode, 201);
    const w = res.json() as WalletView & { account_index: number };
    t.equal(addressFromXpub(vault.xpub, w), w.address, `${w.chain} ${w.address_type} account ${w.account_index} (${w.derivation_path}) re-derives`);
    const again = await a.call('GET', `/v1/wallets/${(w as unknown as { id: string }).id}`);
    t.equal(again.json().derivation_path, w.derivation_path, 'GET /v1/wallets/{id} carries the path');
  }
  // The paths are the documented ones (docs/derivation.md "Paths").
  const paths = ((await a.call('GET', `/v1/vaults/${created.id}/wallets`)).json().data as WalletView[]).map((w) => w.derivation_path);
  t.same(paths, ['m/44/60/0/0/0', 'm/44/60/7/0/0', 'm/44/60/2147483647/0/0', 'm/84/1/0/0/0', 'm/86/1/0/0/0', 'm/86/1/3/0/0', 'm/84/1/1/0/0']);
  t.not(addressFromXpub(extendedPublicKey(publicKey, bytesToHex(randomBytes(32)), 'sandbox'), { chain: 'evm-local', address_type: 'evm', address: '', derivation_path: 'm/44/60/0/0/0' }),
    addressFromXpub(vault.xpub, { chain: 'evm-local', address_type: 'evm', address: '', derivation_path: 'm/44/60/0/0/0' }), 'another chain code gives other addresses: the chain code is needed');
});
