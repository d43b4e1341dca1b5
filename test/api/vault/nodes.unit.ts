// Customer node enrolment on the vault API (docs/vault-api.md "Nodes"): enrol, list, revoke, the TEE
// attestation and measurements, and GET /v1/node-config. Every change is the customer's signed request,
// appended to its trust log for the signer nodes; every refusal changes nothing.
import t from 'tap';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ed25519 } from '@noble/curves/ed25519.js';
import { vaultApp } from './vault-app.ts';
import { nodeIdentity } from './enrolled-node.ts';
import { createDevAttestationAuthority } from '../../../tee/attestation/dev-provider.ts';
import { nitroTeeVerifier } from '../../../tee/attestation/enrolment-verifier.ts';
import { teeNodeBinding } from '../../../core/trust/tee-binding.ts';
import { decodeTrustEntry } from '../../../core/trust/trust-entry.ts';
import type { VaultRecord } from '../../../api/vaults/records.ts';

const authority = createDevAttestationAuthority();
const verifyTee = nitroTeeVerifier({ rootsPem: authority.rootPem, allowDevRoot: true });
const IMAGE = { 0: new Uint8Array(48).fill(0x0a), 1: new Uint8Array(48).fill(1), 2: new Uint8Array(48).fill(2) };

t.test('enrol, list and revoke a self node', async (t) => {
  const { call, vaults, org } = await vaultApp(t, { verifyTee, env: { API_NODE_COORDINATOR_ADDRESS: 'coordinator.custody.test:7400', API_NODE_OPERATOR_KEYS: 'AB'.repeat(32) } });
  const logLength = async () => (await vaults.trustLog(org.id)).length;
  const before = await logLength();
  const node = nodeIdentity();
  const first = await call('POST', '/v1/nodes', { kind: 'self', label: 'rack 1', ...node });
  t.equal(first.statusCode, 201);
  t.match(first.json(), { id: node.node_id, kind: 'self', state: 'active', label: 'rack 1', pcrs: null, attached: false, revoked_at: null });
  t.equal(await logLength(), before + 1, 'the signed enrolment went into the trust log');
  const entry = decodeTrustEntry((await vaults.trustLog(org.id)).at(-1)!);
  t.match(entry, { kind: 'request', method: 'POST' }, 'as the customer\'s request');
  const again = await call('POST', '/v1/nodes', { kind: 'self', ...node });
  t.equal(again.statusCode, 200, 'the same enrolment again');
  t.equal(await logLength(), before + 1, 'appends nothing');

  const rows: [string, unknown, number, string, RegExp][] = [
    ['another encryption key', { kind: 'self', ...node, encryption_key: nodeIdentity().encryption_key }, 409, 'conflict', /other keys/],
    ['a tee enrolment of the same node', { kind: 'tee', ...node, attestation: 'AAAA' }, 400, 'bad_attestation', /does not verify/],
    ['node id not derived from the key', { kind: 'self', ...nodeIdentity(), node_id: node.node_id }, 400, 'invalid_request', /derived/],
    ['an attestation for a self node', { kind: 'self', ...nodeIdentity(), attestation: 'AAAA' }, 400, 'invalid_request', /tee nodes only/],
    ['a tee node without attestation', { kind: 'tee', ...nodeIdentity() }, 400, 'invalid_request', /attestation document/],
    ['an unknown kind', { kind: 'service', ...nodeIdentity() }, 400, 'invalid_request', /kind/],
    ['an extra field', { kind: 'self', ...nodeIdentity(), owner: 'x' }, 400, 'invalid_request', /Unexpected/],
  ];
  for (const [name, body, status, code, message] of rows) {
    const r = await call('POST', '/v1/nodes', body);
    t.equal(r.statusCode, status, `${name}: ${r.body}`);
    t.match(r.json(), { code, error: message }, name);
  }
  t.equal(await logLength(), before + 1, 'no refusal appended anything');

  // Another organization cannot take the node.
  const other = await vaults.createOrg('Other', bytesToHex(ed25519.getPublicKey(ed25519.utils.randomSecretKey())));
  await t.rejects(vaults.nodes.enrol(other.org.id, { kind: 'self', ...node }), { code: 'node_taken' });

  const list = await call('GET', '/v1/nodes');
  t.same(list.json().nodes.map((n: { id: string }) => n.id), [node.node_id]);

  const revoked = await call('POST', `/v1/nodes/${node.node_id}/revoke`);
  t.equal(revoked.statusCode, 200);
  t.match(revoked.json(), { state: 'revoked', revoked_at: /^\d{4}-/ });
  t.equal(await logLength(), before + 2, 'the signed revocation went into the log');
  t.equal((await call('POST', `/v1/nodes/${node.node_id}/revoke`)).statusCode, 409, 'revoked already');
  const back = await call('POST', '/v1/nodes', { kind: 'self', ...node });
  t.equal(back.statusCode, 403, 'a revoked node cannot come back');
  t.equal(back.json().code, 'node_revoked');
  t.equal((await call('POST', `/v1/nodes/${nodeIdentity().node_id}/revoke`)).statusCode, 404, 'an unknown node');
  t.equal((await call('POST', '/v1/nodes/not-a-node/revoke')).statusCode, 400, 'not a node id');

  const self = await call('POST', '/v1/vaults', { tier: 'self' });
  t.equal(self.statusCode, 409, 'no active self node left');
  t.equal(self.json().code, 'no_enrolled_node');

  const setup = await call('GET', '/v1/node-config');
  t.same(setup.json(), { coordinator_address: 'coordinator.custody.test:7400', coordinator_addresses: ['coordinator.custody.test:7400'], operator_keys: ['ab'.repeat(32)], organization: org.id });
});

t.test('a self vault seats the earliest active enrolled node, or the one it pins', async (t) => {
  const { call, store } = await vaultApp(t);
  const [a, b] = [nodeIdentity(), nodeIdentity()];
  for (const n of [a, b]) t.equal((await call('POST', '/v1/nodes', { kind: 'self', ...n })).statusCode, 201);
  const first = await call('POST', '/v1/vaults', { tier: 'self' });
  t.equal((await store.get<VaultRecord>('vaults', first.json().id))?.customer_node_id, a.node_id, 'the earliest');
  const pinned = await call('POST', '/v1/vaults', { tier: 'self', customer_node: b });
  t.equal((await store.get<VaultRecord>('vaults', pinned.json().id))?.customer_node_id, b.node_id, 'the pinned one');
  t.equal(first.json().committee, null, 'no committee before the key exists');
  t.equal((await call('POST', `/v1/nodes/${a.node_id}/revoke`)).statusCode, 200);
  const after = await call('POST', '/v1/vaults', { tier: 'self' });
  t.equal((await store.get<VaultRecord>('vaults', after.json().id))?.customer_node_id, b.node_id, 'never a revoked one');
  const revokedPin = await call('POST', '/v1/vaults', { tier: 'self', customer_node: a });
  t.equal(revokedPin.statusCode, 403);
  t.equal(revokedPin.json().code, 'node_revoked');
});

t.test('a tee node enrols with an attestation that binds its keys; measurements move forward only', async (t) => {
  const { call } = await vaultApp(t, { verifyTee });
  const node = nodeIdentity();
  const binding = teeNodeBinding((await call('GET', '/v1/node-config')).json().organization, node.node_id, node.signing_key, node.encryption_key);
  const doc = (userData: Uint8Array, pcrs: Record<number, Uint8Array> = IMAGE) => Buffer.from(authority.attest({ at: new Date(), pcrs, userData })).toString('base64');

  const foreign = await call('POST', '/v1/nodes', { kind: 'tee', ...node, attestation: doc(new Uint8Array(32)) });
  t.equal(foreign.statusCode, 400, 'user_data binding something else');
  t.match(foreign.json(), { code: 'bad_attestation', error: /user_data/ });
  const debug = await call('POST', '/v1/nodes', { kind: 'tee', ...node, attestation: doc(binding, {}) });
  t.equal(debug.statusCode, 400, 'a debug-mode enclave');
  t.match(debug.json(), { code: 'bad_attestation', error: /debug/ });
  const ok = await call('POST', '/v1/nodes', { kind: 'tee', ...node, attestation: doc(binding) });
  t.equal(ok.statusCode, 201);
  t.equal(ok.json().pcrs['0'], bytesToHex(IMAGE[0]), 'the attested image');

  t.equal((await call('GET', '/v1/tee/measurements')).statusCode, 404, 'none pinned yet');
  const pcr0 = bytesToHex(IMAGE[0]);
  const v1 = await call('PUT', '/v1/tee/measurements', { version: 1, allowed: [{ 0: pcr0 }] });
  t.equal(v1.statusCode, 200);
  t.match(v1.json(), { version: 1, allowed: [{ 0: pcr0 }] });
  const rows: [string, unknown, number][] = [
    ['the same version', { version: 1, allowed: [{ 0: pcr0 }] }, 409],
    ['no PCR0', { version: 2, allowed: [{ 1: pcr0 }] }, 400],
    ['an all-zero PCR', { version: 2, allowed: [{ 0: '00'.repeat(48) }] }, 400],
    ['a short value', { version: 2, allowed: [{ 0: 'ab' }] }, 400],
    ['a PCR a set may not name', { version: 2, allowed: [{ 0: pcr0, 7: pcr0 }] }, 400],
    ['no sets', { version: 2, allowed: [] }, 400],
  ];
  for (const [name, body, status] of rows) t.equal((await call('PUT', '/v1/tee/measurements', body)).statusCode, status, name);
  t.match((await call('GET', '/v1/tee/measurements')).json(), { version: 1 }, 'unchanged');
  const tee = await call('POST', '/v1/vaults', { tier: 'customer_tee' });
  t.equal(tee.statusCode, 202, 'a customer_tee vault with the enrolled tee node');
});

t.test('without attestation roots a tee enrolment is unavailable', async (t) => {
  const { call } = await vaultApp(t);
  const r = await call('POST', '/v1/nodes', { kind: 'tee', ...nodeIdentity(), attestation: 'AAAA' });
  t.equal(r.statusCode, 503);
});
