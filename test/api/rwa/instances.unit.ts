// A token's instances read from the chain (docs/platform/rwa.md "Documents and metadata") on one real anvil:
// an ERC-721 and an ERC-1155 deployed and minted through Tokenization I's Safe operations (a 1-of-2 Safe the
// outside owner signs for alone), some burned; `instances` answers exactly what the mint and burn events say,
// and `relationships` reads both tokens' code on chain.
import t from 'tap';
import { getAddress, type Hex } from 'viem';
import { tokenizationApp } from '../tokenization/tokenization-app.ts';
import { safeTxTypedData, type SafeTransaction } from '../../../api/tokenization/chain/safe-transaction.ts';
import { anvilAccount } from '../../chains/anvil.ts';

// The app and its anvil are started, and stopped, by a test of its own, not at the top level: the file
// shares its process with others (test/support/units.ts).
t.test('a token\'s instances, on the app over one anvil', async (t) => {
  t.setTimeout(300_000);
  const s = await tokenizationApp(t);
  const outsider = anvilAccount(5);
  const holder = anvilAccount(6);
  let n = 0;
  const key = () => ({ 'idempotency-key': `inst-${n++}` });

  async function token(kind: 'erc721' | 'erc1155') {
    const w = await s.vaultWallet(s.acme.org);
    const body = { chain: 'evm-local', admin: { owners: [{ wallet_id: w.wallet.id }, { address: outsider.address }], threshold: 1 }, ...(kind === 'erc1155' ? { uri: 'ipfs://x/{id}' } : { name: 'Deed', symbol: 'DEED' }) };
    const made = await s.call('POST', `/v1/tokenization/${kind}`, body, s.acme.owner, key());
    t.equal(made.statusCode, 201, made.body);
    await s.tokenization.tokens.settled();
    const tok = (await s.call('GET', `/v1/tokenization/tokens/${made.json().id}`)).json() as { id: string; safe: string; address: string; status: string };
    t.equal(tok.status, 'deployed');
    const op = async (path: string, b: unknown) => {
      const p = (await s.call('POST', `/v1/tokenization/tokens/${tok.id}/${path}`, b, s.acme.owner, key())).json() as { id: string; safe_tx: Record<string, string> };
      const x = p.safe_tx;
      const tx: SafeTransaction = { to: getAddress(x.to!), value: 0n, data: x.data as Hex, operation: 0, safeTxGas: 0n, baseGas: 0n, gasPrice: 0n, gasToken: getAddress(x.gas_token!), refundReceiver: getAddress(x.refund_receiver!), nonce: BigInt(x.nonce!) };
      const signed = await s.call('POST', `/v1/tokenization/tokens/${tok.id}/operations/${p.id}/signatures`, { owner: outsider.address, signature: await outsider.signTypedData(safeTxTypedData(getAddress(tok.safe), 31337, tx)) });
      t.equal(signed.json().state, 'ready', signed.body);
      await s.tokenization.operations.settled();
      t.equal((await s.call('GET', `/v1/tokenization/tokens/${tok.id}/operations/${p.id}`)).json().state, 'confirmed', path);
    };
    await op('roles/grant', { role: 'MINTER_ROLE', account: tok.safe });
    await op('policies', { minter: tok.safe, cap: (1n << 255n).toString(), period_seconds: 86_400 });
    return { ...tok, op };
  }

  t.test('instances: the ids minted, burned and their supply, from the chain', async (t) => {
    const nft = await token('erc721');
    const base = `/v1/rwa/tokens/${nft.id}`;
    t.same((await s.call('GET', `${base}/instances`, undefined, s.acme.viewer)).json().data, [], 'nothing minted yet');
    await nft.op('mint', { to: holder.address, token_id: '7' });
    await nft.op('mint', { to: nft.safe, token_id: '2' });
    await nft.op('burn', { token_id: '2' });
    const r = (await s.call('GET', `${base}/instances`, undefined, s.acme.viewer)).json();
    t.equal(r.block, (await s.chain.client.getBlockNumber({ cacheTime: 0 })).toString());
    t.same(r.data.map((d: Record<string, string>) => [d.token_id, d.minted, d.burned, d.supply]), [['2', '1', '1', '0'], ['7', '1', '0', '1']]);

    const multi = await token('erc1155');
    await multi.op('mint', { to: holder.address, token_id: '3', amount: '10' });
    await multi.op('mint', { to: multi.safe, token_id: '5', amount: '4' });
    await multi.op('burn', { account: multi.safe, token_id: '5', amount: '1' });
    const m = (await s.call('GET', `/v1/rwa/tokens/${multi.id}/instances`, undefined, s.acme.viewer)).json();
    t.same(m.data.map((d: Record<string, string>) => [d.token_id, d.token_id_hex, d.minted, d.burned, d.supply]), [['3', '3'.padStart(64, '0'), '10', '0', '10'], ['5', '5'.padStart(64, '0'), '4', '1', '3']]);
    t.equal((await s.call('GET', `/v1/rwa/tokens/${multi.id}/instances`, undefined, s.globex.owner)).statusCode, 404, 'another tenant');

    // Both contracts exist on chain: relationships read their code.
    const rel = (await s.call('GET', `${base}/relationships`, undefined, s.acme.viewer)).json();
    t.same(rel, { token_id: nft.id, chain: 'evm-local', on_chain: true, data: [] });
  });
});
