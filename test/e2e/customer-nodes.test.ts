// Customer-run nodes end to end with real processes (coordinator, three service nodes, the
// organization's self node, a TEE node attested by the DEV-ONLY authority, the API) and a real anvil:
// a vault reshares hosted -> self -> customer_tee -> hosted keeping its key and address, and signs in
// every tier; a TEE node is seated only with measurements the organization pinned; a node that is not
// enrolled is never seated; revoking the TEE node stops its signatures (docs/self-node.md, docs/tee.md). The
// first reshare's events are received at an endpoint the workspace registered (the catalog-events rows).
import t from 'tap';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bytesToHex } from '@noble/hashes/utils.js';
import { createWalletClient, http, parseEther, type Hex } from 'viem';
import { foundry } from 'viem/chains';
import { startStack, mining } from './stack.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import type { Vault } from '../../api/sdk/client.ts';
import { verifyWebhook } from '../../api/sdk/webhook-receiver.ts';
import { receiver, type Received } from '../support/loopback-receiver.ts';
import { elsewhereIn, received } from '../api/webhooks/catalog-receipt.ts';

t.setTimeout(420_000);

const IMAGE = { 0: new Uint8Array(48).fill(0x0a), 1: new Uint8Array(48).fill(0x01), 2: new Uint8Array(48).fill(0x02) };
const OTHER_IMAGE = new Uint8Array(48).fill(0x0b);

t.test('customer nodes: enrolled self and TEE nodes hold the shares they should, and only those', async (t) => {
  // Every node and the API pin the DEV-ONLY attestation root, as a local cluster does.
  const authority = createDevAttestationAuthority();
  const rootsFile = join(mkdtempSync(join(tmpdir(), 'dev-root-')), 'dev-root.pem');
  writeFileSync(rootsFile, authority.rootPem);
  const stack = await startStack({
    selfNode: true, anvil: true, bearerKey: true,
    nodeEnv: { NODE_TEE_ROOTS_FILE: rootsFile, NODE_TEE_ALLOW_DEV_ROOT: 'true' },
    apiEnv: { API_TEE_ROOTS_FILE: rootsFile, API_TEE_ALLOW_DEV_ROOT: 'true', API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1' },
    coordinatorEnv: { COORDINATOR_TEE_ROOTS_FILE: rootsFile, COORDINATOR_TEE_ALLOW_DEV_ROOT: 'true' },
  });
  t.teardown(() => stack.stop());
  const { client, cluster } = stack;
  const chain = stack.anvil!;
  const mine = () => chain.testClient.mine({ blocks: 1 });
  const settled = (id: string) => client.waitForVault(id, (v) => v.state !== 'resharing' && v.state !== 'creating', { timeoutMs: 180_000 });

  // The reshare rows of the catalog-events test (ELSEWHERE): an endpoint registered with the workspace's key.
  const rx = await receiver(t);
  const endpoint = await fetch(`${stack.base}/v1/webhook-endpoints`, { method: 'POST', headers: { authorization: `Bearer ${stack.bearer!}`, 'content-type': 'application/json' }, body: JSON.stringify({ url: rx.url, events: ['vault.reshare.started', 'vault.reshare.completed'] }) });
  t.equal(endpoint.status, 201);
  const { secret } = await endpoint.json() as { secret: string };
  const { public_key: publicKey } = await (await fetch(`${stack.base}/v1/public/webhook-signing-key`)).json() as { public_key: string };

  const vault = await client.waitForVault((await client.createVault({ tier: 'hosted', name: 'moving' })).id, undefined, { timeoutMs: 120_000 });
  t.same(vault.committee?.map((m) => m.kind), ['service', 'service', 'service'], 'a hosted vault names its three service nodes');
  const wallet = await client.createWallet(vault.id, { chain: 'evm-local' });
  const funder = createWalletClient({ chain: foundry, transport: http(chain.url), account: '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266' as Hex });
  await chain.publicClient.waitForTransactionReceipt({ hash: await funder.sendTransaction({ to: wallet.address as Hex, value: parseEther('5') }) });
  let sent = 0;
  const transfer = async () => {
    const tx = await client.sendEvm({ wallet, to: '0x00000000000000000000000000000000000a11ce', amount: 1000n + BigInt(sent), idempotencyKey: `transfer-${sent++}` });
    return mining(mine, client.waitForTransaction(tx.id, ['final', 'failed', 'rejected'], { timeoutMs: 120_000 }));
  };
  const sameKey = async (v: Vault) => {
    t.equal(v.public_key, vault.public_key, `${v.tier}: same public key`);
    t.equal((await client.createWallet(v.id, { chain: 'evm-local' })).address, wallet.address, `${v.tier}: same address`);
  };

  // To the self tier: the enrolled self node.
  await client.reshareVault(vault.id, { target_tier: 'self' });
  const inSelf = await settled(vault.id);
  t.equal(inSelf.state, 'active', `moved to self (${inSelf.problem ?? ''})`);
  t.ok(inSelf.committee?.some((m) => m.kind === 'self'), 'the self node holds a share');
  await sameKey(inSelf);
  t.equal((await transfer()).state, 'final', 'the self vault signs');
  const rows: Record<string, Record<string, unknown>> = {
    'vault.reshare.started': { vault_id: vault.id, state: 'resharing', rotation: vault.rotation, tier: 'hosted', target_tier: 'self' },
    'vault.reshare.completed': { vault_id: vault.id, state: 'active', rotation: inSelf.rotation, tier: 'self' },
  };
  const verified = (g: Received) => verifyWebhook(g.headers, g.body, { secrets: [secret], publicKey });
  for (const [name, want] of Object.entries(rows)) await received(t, name, rx, want, verified);
  t.same(Object.keys(rows).sort(), elsewhereIn('test/e2e/customer-nodes.test.ts'), 'exactly the rows the catalog test counts on');

  // A TEE node runs and says it belongs to the organization, but is not enrolled: nothing seats it.
  const teeIdentity = await cluster.identity('tee-1');
  const tee = await cluster.startNode('tee-1', { ...stack.nodeEnv, NODE_KIND: 'tee', NODE_OWNER: stack.organization });
  await t.rejects(client.reshareVault(vault.id, { target_tier: 'customer_tee' }), { status: 409, code: 'no_enrolled_node' }, 'no enrolled TEE node');
  t.equal((await client.getVault(vault.id)).state, 'active', 'the refused reshare changed nothing');

  // Enrolled with an attestation of its image; the organization pins another image first.
  const binding = teeNodeBinding(stack.organization, teeIdentity.node_id, teeIdentity.signing_key, teeIdentity.encryption_key);
  const attestation = Buffer.from(authority.attest({ at: new Date(), pcrs: IMAGE, userData: binding })).toString('base64');
  const enrolled = await client.enrolNode({ kind: 'tee', ...teeIdentity, attestation });
  t.match(enrolled, { id: tee.nodeId, kind: 'tee', state: 'active', attached: true, pcrs: { 0: bytesToHex(IMAGE[0]) } });
  await client.putTeeMeasurements({ version: 1, allowed: [{ 0: bytesToHex(OTHER_IMAGE) }] });
  await client.reshareVault(vault.id, { target_tier: 'customer_tee' });
  const unpinned = await settled(vault.id);
  t.equal(unpinned.state, 'reshare_pending', 'a TEE node whose image is not pinned is not seated');
  t.match(unpinned.problem, /unpinned_measurements/);
  t.equal(unpinned.tier, 'self', 'the vault stays where it was');
  t.equal((await transfer()).state, 'final', 'and the old shares keep signing');

  // The organization pins the node's image: the reshare seats it.
  await client.putTeeMeasurements({ version: 2, allowed: [{ 0: bytesToHex(IMAGE[0]) }] });
  await client.reshareVault(vault.id, { target_tier: 'customer_tee' });
  const inTee = await settled(vault.id);
  t.equal(inTee.state, 'active', `moved to customer_tee (${inTee.problem ?? ''})`);
  t.equal(inTee.tier, 'customer_tee');
  t.ok(inTee.committee?.some((m) => m.node_id === tee.nodeId && m.kind === 'tee'), 'the TEE node holds a share');
  t.notOk(inTee.committee?.some((m) => m.kind === 'self'), 'the self node no longer does');
  await sameKey(inTee);
  t.equal((await transfer()).state, 'final', 'the customer_tee vault signs');

  // Revoking the TEE node stops it: the service nodes sign nothing more with it.
  await client.revokeNode(tee.nodeId);
  const refused = await transfer();
  t.equal(refused.state, 'rejected', 'a transaction needing the revoked node is rejected by the nodes');
  t.match(refused.reason, /node_revoked/);

  // Back to hosted: the revoked node can still deal its share away.
  await client.reshareVault(vault.id, { target_tier: 'hosted' });
  const back = await settled(vault.id);
  t.equal(back.state, 'active', `moved back to hosted (${back.problem ?? ''})`);
  t.same(back.committee?.map((m) => m.kind), ['service', 'service', 'service']);
  await sameKey(back);
  t.equal((await transfer()).state, 'final', 'the hosted vault signs again');
});
