// Real-world assets end to end (issue 40 "Show"; docs/platform/rwa.md, docs/platform/transparency-log.md) on
// real processes (coordinator, three service nodes, the organization's self node, the API) and a real anvil,
// on the one stack the tokenization journey (tokenization-journey.ts) runs on first: the bond below is governed
// by the same three owner vault wallets, 2 of 3, every Safe operation signed by two of them through their
// customer-signed intents. A bond schema from the template, published and bound; fields set and one attested
// by an attester whose Ed25519 key only this test holds; two eligible holders and one not (a transfer to it
// reverts on chain), a lockup (its holder's transfer reverts); a coupon paid exactly (balances read with viem,
// the remainder left in the admin Safe); a 2:1 split; a document readable only by its grantee; a witness
// cosigning the log; provenance/verify green; then one field entry altered in the API's store (the API stopped,
// LevelDB opened here, the API restarted) and provenance/verify names that entry by index and kind.
import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createWalletClient, encodeFunctionData, getAddress, http, keccak256, toHex, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { ed25519 } from '@noble/curves/ed25519.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { startTokenizationStack, type Reply } from './tokenization-stack.ts';
import { tokenizationJourney } from './tokenization-journey.ts';
import { C2spWitness } from '../api/rwa/witness/c2sp-witness.ts';
import type { Wallet } from '../../api/sdk/client.ts';
import { builtArtifact } from '../../api/tokenization/chain/artifacts.ts';
import { infrastructureAddresses } from '../../api/tokenization/chain/safe-infrastructure.ts';
import { encodeMultiSend } from '../../api/tokenization/chain/multisend.ts';
import { statementText, type FieldStatement } from '../../api/rwa/schema/attestation.ts';
import { valueSha256 } from '../../api/rwa/schema/canonical-json.ts';
import { parseNote } from '../../api/rwa/log/signed-note.ts';
import { leafHash } from '../../api/rwa/log/merkle.ts';
import { LOG_ENTRIES, entryId } from '../../api/rwa/log/collections.ts';
import type { LogEntryRecord } from '../../api/rwa/log/records.ts';
import { RecordStore } from '../../api/store/record-store.ts';
import { anvilAccount } from '../chains/anvil.ts';

t.setTimeout(900_000);

// Two more keys of the sandbox workspace besides the admin bearer: the document's grantee and another caller.
const s = await startTokenizationStack({ selfNode: true, moreKeys: ['viewer', 'developer'] });
t.teardown(() => s.stop());

let owners: Wallet[] = [];
await t.test('the tokenization journey', async (t) => {
  owners = (await tokenizationJourney(t, s)).owners;
});

// Accounts 1-5 are the tokenization journey's and 7 the service deployer: the holders are others.
const [alice, bob, carol, coinIssuer] = [anvilAccount(8), anvilAccount(9), anvilAccount(10), anvilAccount(11)];
const erc20 = builtArtifact('ManagedERC20').abi;
const registryAbi = builtArtifact('AccessRegistry').abi;
// The token's ABI with the registry's errors, so a refusal by the registry decodes.
const bondAbi = [...erc20, ...registryAbi.filter((x) => x.type === 'error')];
const MINTER = keccak256(toHex('MINTER_ROLE'));
const infra = infrastructureAddresses();
const utf8 = new TextEncoder();
const sha256 = (b: Uint8Array | string) => createHash('sha256').update(b).digest('hex');

await t.test('a real-world asset: a bond with its schema, attested fields, holders on chain, a coupon, a split, a document and its witnessed log', async (t) => {
  t.equal(owners.length, 3, 'the tokenization journey\'s three owner vaults');
  const [a, b, c] = owners as [Wallet, Wallet, Wallet];
  const chain = s.anvil!.publicClient;
  const test = s.anvil!.testClient;
  const [viewer, developer] = s.keys as [typeof s.keys[0], typeof s.keys[0]];
  /** A platform API call with one of the workspace's keys. */
  const as = async (bearer: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const r = await fetch(`${s.base}/v1${path}`, {
      method, headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, json: await r.json() };
  };
  let k = 0;
  const api = (method: string, path: string, body?: unknown) => s.platform(method, path, body, method === 'GET' ? {} : { 'idempotency-key': `rwa-${k++}` });
  const must = (r: Reply, status: number, what: string) => {
    if (r.status !== status) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  /** Two owner vaults sign an operation already proposed; it executes. */
  const signOp = async (tokenId: string, opId: string, signers: Wallet[]) => {
    const op = must(await s.platform('GET', `/tokenization/tokens/${tokenId}/operations/${opId}`), 200, 'reading an operation');
    await s.sign(op, signers, `rwa-sign-${k++}`);
    return s.settled(tokenId, opId);
  };
  for (const h of [alice, bob, carol, coinIssuer]) await test.setBalance({ address: h.address, value: 10n ** 20n });
  const wallet = (x: typeof alice) => createWalletClient({ account: x, chain: foundry, transport: http(s.anvil!.url) });

  // The bond: an ERC-20 (0 decimals) under the same 2-of-3 Safe of the customer's vaults.
  const deployed = must(await s.platform('POST', '/tokenization/erc20', { chain: 'evm-local', name: 'Acme Bond 2030', symbol: 'AB30', decimals: 0, admin: { owners: owners.map((w) => ({ wallet_id: w.id })), threshold: 2 } }, { 'idempotency-key': 'rwa-bond' }), 201, 'deploying the bond');
  const tok = await s.waitToken(deployed.id, (x) => x.status !== 'deploying', 'the bond deployed');
  t.equal(tok.status, 'deployed');
  const bond = { address: getAddress(tok.address), abi: bondAbi } as const;
  const safe = getAddress(tok.safe);
  const rwa = `/rwa/tokens/${tok.id}`;
  const units = (who: Hex) => chain.readContract({ ...bond, functionName: 'balanceOf', args: [who] });

  await t.test('a bond schema from the template, published and bound; fields set and attested by the attester\'s own key', async (t) => {
    const { version: draft } = must(await api('POST', '/rwa/asset-schemas/acme-bond-2030/draft', { template: 'bond', name: 'Acme bond 2030' }), 200, 'the draft');
    t.match(draft, { version: 1, status: 'draft', sha256: /^[0-9a-f]{64}$/ });
    const published = await api('POST', '/rwa/asset-schemas/acme-bond-2030/publish', { version: 1, expect_sha256: draft.sha256 });
    t.match([published.status, published.json.version], [200, { version: 1, status: 'published', sha256: draft.sha256 }], JSON.stringify(published.json));
    const binding = must(await api('POST', `${rwa}/schema-binding`, { schema_id: 'acme-bond-2030', version: 1 }), 201, 'binding');
    t.match(binding, { token_id: tok.id, schema_id: 'acme-bond-2030', version: 1, sha256: draft.sha256 });

    // A token's fields are the schema's leaves, set one at a time.
    for (const [path, value] of [['isin', 'US0000AB3012'], ['issuer.name', 'Acme Corp'], ['currency', 'USD'], ['face_value', '1000'], ['issue_date', '2026-01-15'], ['maturity_date', '2030-01-15'], ['coupon.frequency', 'semi_annual'], ['rating', 'AA']] as const) {
      const r = await api('POST', `${rwa}/fields/${path}`, { value });
      t.equal(r.status, 200, `${path}: ${JSON.stringify(r.json)}`);
    }
    const bad = await api('POST', `${rwa}/fields/currency`, { value: 'dollars' });
    t.match([bad.status, bad.json.code], [422, 'field_value_invalid'], 'a value the schema refuses');

    // The attester's key is this test's alone: the API receives the public key and the signatures.
    const secret = ed25519.utils.randomSecretKey();
    const attester = must(await api('POST', `${rwa}/attesters`, { name: 'Trustee', key: { scheme: 'ed25519', public_key: bytesToHex(ed25519.getPublicKey(secret)) }, fields: ['coupon'] }), 201, 'registering the attester');
    const rate = 450;
    const statement = (field: string, value: unknown, nonce: number): FieldStatement => ({
      token_id: tok.id, chain_id: 31337, contract: tok.address.toLowerCase(), field, value_sha256: valueSha256(value), schema_id: 'acme-bond-2030', schema_version: 1, schema_sha256: draft.sha256, attester_id: attester.id, nonce,
    });
    const sign = (st: FieldStatement) => bytesToHex(ed25519.sign(utf8ToBytes(statementText({ kind: 'field', statement: st })), secret));
    const entry = { attester_id: attester.id, value: rate, nonce: 1, signature: sign(statement('coupon.rate_bps', rate, 1)) };
    const attested = await api('POST', `${rwa}/fields/coupon.rate_bps/attested-entry`, entry);
    t.equal(attested.status, 200, JSON.stringify(attested.json));
    t.match(attested.json, { path: 'coupon.rate_bps', value: rate, source: { type: 'attester' }, attestations: [{ attester_id: attester.id }] }, 'the attested value is the field\'s');
    const replayed = await api('POST', `${rwa}/fields/coupon.rate_bps/attested-entry`, entry);
    t.match([replayed.status, replayed.json.code], [409, 'attestation_replayed'], 'the same signature counts once');
    const outside = await api('POST', `${rwa}/fields/face_value/attested-entry`, { attester_id: attester.id, value: '2000', nonce: 2, signature: sign(statement('face_value', '2000', 2)) });
    t.match([outside.status, outside.json.code], [403, 'attester_out_of_scope'], 'a field outside its scope');
    const fields = must(await s.platform('GET', `${rwa}/fields`), 200, 'the fields');
    t.same(fields.missing_required, [], 'every required field set');
    const byPath = Object.fromEntries((fields.fields as { path: string; value: unknown }[]).map((f) => [f.path, f.value]));
    t.same([byPath['face_value'], byPath['currency'], byPath['coupon.rate_bps']], ['1000', 'USD', rate], 'read back: nothing refused was stored');
  });

  let lockedUntil = 0;
  await t.test('holders on chain: two eligible, one not (a transfer to it reverts), a lockup (its holder\'s transfer reverts)', async (t) => {
    // One Safe transaction: the Safe a minter under a policy, 100 units to Alice and 233 to Carol.
    const setUp = {
      to: infra.multiSendCallOnly, operation: 1, data: encodeMultiSend([
        { to: tok.address, data: encodeFunctionData({ abi: erc20, functionName: 'grantRole', args: [MINTER, safe] }) },
        { to: tok.address, data: encodeFunctionData({ abi: erc20, functionName: 'setMintPolicy', args: [safe, 1_000_000n, 86_400n] }) },
        { to: tok.address, data: encodeFunctionData({ abi: erc20, functionName: 'mint', args: [alice.address, 100n] }) },
        { to: tok.address, data: encodeFunctionData({ abi: erc20, functionName: 'mint', args: [carol.address, 233n] }) },
      ]),
    };
    t.equal((await s.operation(tok.id, 'raw-safe-tx', setUp, [a, b], 'rwa-setup')).state, 'confirmed');
    t.same([await units(alice.address), await units(carol.address)], [100n, 233n], 'on chain: minted');

    // Eligibility is global: each PUT proposes on every deployed token of the workspace; the bond's is signed here.
    for (const [who, verified] of [[alice, true], [carol, true], [bob, false]] as const) {
      const r = must(await s.platform('PUT', `/rwa/holders/${who.address}/eligibility`, { verified, jurisdiction: 276, category: 2, expires_at: null }), 200, 'eligibility');
      const mine = (r.operations as { token_id: string; operation_id: string }[]).find((o) => o.token_id === tok.id);
      t.ok(mine, 'an operation on the bond');
      t.equal((await signOp(tok.id, mine!.operation_id, [b, c])).state, 'confirmed', `${verified ? 'eligible' : 'not eligible'}: executed`);
    }
    const registry = getAddress(must(await s.platform('GET', `${rwa}/eligibility/${alice.address}`), 200, 'eligibility').registry.address);
    t.equal(await chain.readContract({ address: registry, abi: registryAbi, functionName: 'admin' }), safe, 'the registry\'s admin is the bond\'s Safe');
    t.equal((await s.operation(tok.id, 'access-registry', { registry }, [a, c], 'rwa-attach')).state, 'confirmed');
    t.equal(getAddress(await chain.readContract({ ...bond, functionName: 'accessRegistry' }) as Hex), registry, 'on chain: the bond consults its registry');
    for (const [who, eligible] of [[alice, true], [carol, true], [bob, false]] as const) {
      t.match(must(await s.platform('GET', `${rwa}/eligibility/${who.address}`), 200, 'eligibility'), { registry: { attached: true }, addresses: [{ eligibility_status: 'applied', on_chain: { eligibility: { verified: eligible, eligible_now: eligible } } }] }, `${eligible ? 'eligible' : 'not eligible'}, read from the chain`);
    }

    await t.rejects(chain.simulateContract({ account: alice, ...bond, functionName: 'transfer', args: [bob.address, 10n] }), /HolderNotEligible/, 'to the ineligible holder: HolderNotEligible');
    const refused = await wallet(alice).writeContract({ ...bond, functionName: 'transfer', args: [bob.address, 10n], gas: 200_000n });
    t.equal((await chain.waitForTransactionReceipt({ hash: refused })).status, 'reverted', 'sent anyway: reverted on chain');
    const sent = await wallet(alice).writeContract({ ...bond, functionName: 'transfer', args: [carol.address, 10n] });
    t.equal((await chain.waitForTransactionReceipt({ hash: sent })).status, 'success', 'to an eligible holder: transferred');
    t.same([await units(alice.address), await units(carol.address), await units(bob.address)], [90n, 243n, 0n]);

    lockedUntil = Number((await chain.getBlock()).timestamp) + 3600;
    const lock = must(await s.platform('PUT', `${rwa}/lockups/${alice.address}`, { until: lockedUntil }), 200, 'the lockup');
    t.equal((await signOp(tok.id, lock.operation_id, [a, b])).state, 'confirmed');
    t.match(must(await s.platform('GET', `${rwa}/eligibility/${alice.address}`), 200, 'eligibility'), { addresses: [{ lockup_status: 'applied', on_chain: { locked_until: lockedUntil } }] });
    await t.rejects(chain.simulateContract({ account: alice, ...bond, functionName: 'transfer', args: [carol.address, 5n] }), /HolderLocked/, 'locked: HolderLocked');
    const locked = await wallet(alice).writeContract({ ...bond, functionName: 'transfer', args: [carol.address, 5n], gas: 200_000n });
    t.equal((await chain.waitForTransactionReceipt({ hash: locked })).status, 'reverted', 'the locked holder\'s transfer, sent anyway: reverted on chain');
    t.same([await units(alice.address), await units(carol.address)], [90n, 243n], 'nothing moved');
  });

  await t.test('a coupon paid exactly at the record block; the remainder stays in the admin Safe', async (t) => {
    // The payout coin: an ERC-20 of another issuer, 1,000,000 base units in the bond's Safe.
    const coinHash = await wallet(coinIssuer).deployContract({ abi: erc20, bytecode: builtArtifact('ManagedERC20').bytecode, args: ['Acme Dollar', 'AUSD', 6, coinIssuer.address, infra.forwarder] });
    const coin = { address: (await chain.waitForTransactionReceipt({ hash: coinHash })).contractAddress!, abi: erc20 } as const;
    for (const call of [
      { functionName: 'grantRole', args: [MINTER, coinIssuer.address] }, { functionName: 'setMintPolicy', args: [coinIssuer.address, 10n ** 12n, 86_400n] }, { functionName: 'mint', args: [safe, 1_000_000n] },
    ] as const) await chain.waitForTransactionReceipt({ hash: await wallet(coinIssuer).writeContract({ ...coin, ...call } as never) });
    const paid = () => Promise.all([alice.address, carol.address, bob.address, safe].map((x) => chain.readContract({ ...coin, functionName: 'balanceOf', args: [x] })));
    t.same(await paid(), [0n, 0n, 0n, 1_000_000n]);

    // The cap table is indexed once a block is the finality depth (2) below the head.
    const record = await chain.getBlockNumber({ cacheTime: 0 });
    await test.mine({ blocks: 2 });
    const table = must(await s.platform('GET', `${rwa}/cap-table?block=${record}`), 200, 'the cap table');
    t.same(new Map(table.entries.map((e: { address: string; balance: string }) => [e.address, e.balance])), new Map([[alice.address.toLowerCase(), '90'], [carol.address.toLowerCase(), '243']]), 'the cap table at the record block: the chain\'s balances');

    const d = must(await api('POST', `${rwa}/distributions`, { asset: coin.address, amount: '1000', record_block: record.toString() }), 201, 'the coupon');
    // floor(1000 × 90 / 333) = 270, floor(1000 × 243 / 333) = 729: 999 paid, 1 left.
    t.match(d, { state: 'pending', plan: { supply: '333', holders: 2, total: '999', remainder: '1' } });
    const executing = must(await api('POST', `${rwa}/distributions/${d.id}/execute`), 200, 'executing');
    t.equal(executing.plan.batches.length, 1);
    t.same(await paid(), [0n, 0n, 0n, 1_000_000n], 'proposed: nothing paid before the owners sign');
    t.equal((await signOp(tok.id, executing.plan.batches[0].operation_id, [a, c])).state, 'confirmed');
    const done = must(await api('POST', `${rwa}/distributions/${d.id}/execute`), 200, 'completing');
    t.match(done, { state: 'completed', plan: { batches: [{ state: 'confirmed', logged: 2 }] } });
    t.same(await paid(), [270n, 729n, 0n, 1_000_000n - 999n], 'on chain: each holder its floor; the Safe paid 999 and keeps the remainder of 1');
    t.equal((await api('POST', `${rwa}/distributions/${d.id}/execute`)).json.state, 'completed', 'executing again pays nothing');
    t.same(await paid(), [270n, 729n, 0n, 999_001n]);
  });

  await t.test('a 2:1 split through the corporate-action state machine', async (t) => {
    const record = await chain.getBlockNumber({ cacheTime: 0 });
    await test.mine({ blocks: 2 });
    const ca = must(await api('POST', `${rwa}/corporate-actions`, { type: 'split', ratio: '2:1', record_block: record.toString() }), 201, 'the split');
    t.equal(ca.state, 'draft');
    const advance = async (to: string) => must(await s.platform('POST', `${rwa}/corporate-actions/${ca.id}/advance`, { to }), 200, `advancing to ${to}`);
    const wrong = await s.platform('POST', `${rwa}/corporate-actions/${ca.id}/advance`, { to: 'executing' });
    t.match([wrong.status, wrong.json.code], [409, 'conflict'], 'draft to executing: refused');
    t.equal((await advance('approved')).state, 'approved');
    t.match(await advance('record_taken'), { state: 'record_taken', plan: { supply: '333', total: '333', remainder: '0' } });
    const executing = await advance('executing');
    t.equal(executing.state, 'executing');
    for (const batch of executing.plan.batches) t.equal((await signOp(tok.id, batch.operation_id, [b, c])).state, 'confirmed');
    t.equal((await advance('completed')).state, 'completed');
    t.same([await units(alice.address), await units(carol.address), await chain.readContract({ ...bond, functionName: 'totalSupply' })], [180n, 486n, 666n], 'on chain: every holding doubled');
    t.same(must(await s.platform('GET', `${rwa}/corporate-actions/${ca.id}`), 200, 'the split').transitions.map((x: { to: string }) => x.to), ['draft', 'approved', 'record_taken', 'executing', 'completed'], 'every transition recorded');
  });

  const pdf = Buffer.concat([Buffer.from('%PDF-1.7\n'), randomBytes(200), Buffer.from('\n%%EOF\n')]);
  const png = Buffer.concat([Buffer.from('89504e470d0a1a0a', 'hex'), randomBytes(64)]);
  const docs: string[] = [];
  await t.test('documents: confirmed by their hash, readable only by their grantee', async (t) => {
    for (const [bytes, type, name] of [[pdf, 'application/pdf', 'Prospectus'], [png, 'image/png', 'Term sheet']] as const) {
      const up = must(await api('POST', `${rwa}/documents/upload-url`, { name, content_type: type, content_length: bytes.length }), 201, 'an upload URL');
      const put = await fetch(new URL(new URL(up.upload_url, s.base).pathname + new URL(up.upload_url, s.base).search, s.base), { method: 'PUT', headers: { 'content-type': type }, body: bytes });
      t.equal(put.status, 204, 'uploaded');
      const doc = must(await api('POST', `${rwa}/documents/confirm`, { object_key: up.object_key, sha256: sha256(bytes) }), 201, 'confirming');
      t.match(doc, { name, content_type: type, size: bytes.length, sha256: sha256(bytes) });
      docs.push(doc.id);
    }
    // The prospectus to the viewer key, the term sheet to the developer key.
    must(await api('POST', `${rwa}/document-entitlements`, { grantee: `key:${viewer.keyId}`, document_ids: [docs[0]] }), 201, 'granting the viewer');
    must(await api('POST', `${rwa}/document-entitlements`, { grantee: `key:${developer.keyId}`, document_ids: [docs[1]] }), 201, 'granting the developer');
    const read = await as(viewer.bearer, 'GET', `${rwa}/documents/${docs[0]}`);
    t.equal(read.status, 200, JSON.stringify(read.json));
    const url = new URL(read.json.url, s.base);
    const got = await fetch(new URL(url.pathname + url.search, s.base));
    t.equal(got.status, 200);
    t.equal(sha256(new Uint8Array(await got.arrayBuffer())), sha256(pdf), 'the grantee reads the confirmed bytes');
    for (const [who, bearer] of [['another grantee', developer.bearer], ['the admin who uploaded it', s.bearer!]] as const) {
      const r = await as(bearer, 'GET', `${rwa}/documents/${docs[0]}`);
      t.match([r.status, r.json.code], [403, 'document_not_entitled'], `${who}: refused`);
    }
    t.equal((await as(developer.bearer, 'GET', `${rwa}/documents/${docs[1]}`)).status, 200, 'the other grantee reads its own');
  });

  let fieldIndex = -1;
  await t.test('a witness cosigns the log; provenance/verify is green, each check reported', async (t) => {
    const sth = must(await s.platform('GET', `${rwa}/log/sth`), 200, 'the signed tree head');
    const origin = parseNote(sth.checkpoint).text.split('\n')[0]!;
    t.match(origin, new RegExp(`/rwa/${tok.id}$`), 'the log\'s origin names the token');
    const witness = new C2spWitness({ name: 'witness.example/journey', seed: randomBytes(32), logs: new Map([[origin, [sth.log_key]]]) });
    const url = await witness.listen();
    t.teardown(() => witness.close());
    must(await api('POST', `${rwa}/witnesses`, { vkey: witness.vkey, url }), 201, 'registering the witness');
    const cosigned = must(await api('POST', `${rwa}/log/witness`, {}), 200, 'witnessing');
    t.match(cosigned.results, [{ outcome: 'cosigned' }]);

    const report = must(await s.platform('GET', `${rwa}/provenance/verify`), 200, 'provenance');
    t.equal(report.ok, true, JSON.stringify(report.checks.filter((x: { ok: boolean }) => !x.ok)));
    t.same(report.checks.map((x: { name: string; ok: boolean }) => [x.name, x.ok]), [
      ['log.checkpoint_signatures', true], ['log.entries_rehash', true], ['log.cosignatures', true], ['log.checkpoint_consistency', true], ['attestation_signatures', true], ['chain_operations', true],
    ], 'every check reported, each green');
    t.ok(report.checks.every((x: { checked: number }) => x.checked > 0), 'each checked something');
    // The log holds what the journey did, in order of kinds first seen.
    const kinds: string[] = [];
    for (let i = 0; i < report.tree_size; i++) {
      const e = must(await s.platform('GET', `${rwa}/log/proof/inclusion?index=${i}`), 200, 'an entry');
      const kind = JSON.parse(e.entry).kind as string;
      if (!kinds.includes(kind)) kinds.push(kind);
      if (kind === 'field' && fieldIndex < 0) fieldIndex = i;
    }
    t.same(kinds.sort(), ['attestation', 'attester', 'corporate_action', 'distribution', 'document', 'document_entitlement', 'eligibility', 'field', 'lockup', 'operation', 'payout', 'schema_binding'].sort(), 'every kind of change is in the log, and every executed operation');
  });

  await t.test('one field entry altered in the API\'s store: provenance/verify names it, by index and kind', async (t) => {
    t.ok(fieldIndex >= 0);
    // LevelDB is held by the API process: stop it, alter the entry, start it again on the same store.
    const apiProc = s.cluster.procs.filter((p) => p.name === 'api').at(-1)!;
    await apiProc.kill('SIGTERM');
    const store = await RecordStore.open(join(s.cluster.dir, 'api'));
    try {
      const rec = (await LOG_ENTRIES.in(store).get(entryId(tok.id, fieldIndex)))!;
      const altered = rec.entry.replace('"value":"US0000AB3012"', '"value":"US0000AB3099"');
      t.not(altered, rec.entry, 'the ISIN entry rewritten');
      await LOG_ENTRIES.in(store).put(entryId(tok.id, fieldIndex), { ...rec, entry: altered, leaf_hash: Buffer.from(leafHash(utf8.encode(altered))).toString('hex') } satisfies LogEntryRecord);
    } finally {
      await store.close();
    }
    await s.cluster.startApi(s.apiEnv, 120_000);
    const report = must(await s.platform('GET', `${rwa}/provenance/verify`), 200, 'provenance');
    t.equal(report.ok, false);
    const rehash = report.checks.find((x: { name: string }) => x.name === 'log.entries_rehash');
    t.same(rehash.problems.map((p: { index: number; kind: string }) => [p.index, p.kind]), [[fieldIndex, 'field']], `entry ${fieldIndex}, a field, and no other`);
    t.same(report.checks.filter((x: { ok: boolean }) => !x.ok).map((x: { name: string }) => x.name), ['log.entries_rehash'], 'only the re-hash check fails');
  });
});
