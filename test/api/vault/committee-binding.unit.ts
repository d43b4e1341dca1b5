// The vault API's side of committee binding (docs/vault-api.md "Committee", docs/trust.md "Committees"):
// GET /v1/committees relays the coordinator's proposal, POST /v1/vaults and the reshare request take
// `committee` and `customer_node` and refuse inconsistent ones before anything is queued, and a reshare
// keeps the customer's signed request for the nodes.
import t, { type Test } from 'tap';
import { vaultApp } from './vault-app.ts';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import { NodeKind } from '../../../proto/gen/mpc/v1/node_link_pb.ts';
import type { CoordinatorClient } from '../../../api/coordinator/coordinator-client.ts';
import type { JobRecord, VaultRecord } from '../../../api/vaults/records.ts';

const identity = () => {
  const sk = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  const ek = x25519.getPublicKey(x25519.utils.randomSecretKey());
  return { node_id: nodeIdFor(sk), signing_key: bytesToHex(sk), encryption_key: bytesToHex(ek), sk, ek };
};
const service = identity();
const self = identity();

function setup(t: Test, coordinator?: Partial<CoordinatorClient>) {
  return vaultApp(t, coordinator ? { coordinator } : {});
}

const customerNode = { node_id: self.node_id, signing_key: self.signing_key, encryption_key: self.encryption_key };

t.test('GET /v1/committees relays the proposal for the caller\'s organization', async (t) => {
  let asked: unknown;
  const { call, org } = await setup(t, {
    proposeCommittee: (async (req: unknown) => {
      asked = req;
      return {
        members: [
          { nodeId: service.node_id, kind: NodeKind.SERVICE, signingKey: service.sk, encryptionKey: service.ek },
          { nodeId: self.node_id, kind: NodeKind.SELF, signingKey: self.sk, encryptionKey: self.ek },
        ],
        threshold: 2, rosterVersion: 4n,
      };
    }) as unknown as CoordinatorClient['proposeCommittee'],
  });
  const none = await call('GET', '/v1/committees?tier=self');
  t.equal(none.statusCode, 409, 'no enrolled self node yet');
  t.equal(none.json().code, 'no_enrolled_node');
  t.equal((await call('POST', '/v1/nodes', { kind: 'self', ...customerNode })).statusCode, 201);
  const res = await call('GET', '/v1/committees?tier=self');
  t.equal(res.statusCode, 200);
  t.same(res.json(), {
    tier: 'self', threshold: 2, roster_version: 4,
    members: [{ node_id: service.node_id, kind: 'service', signing_key: service.signing_key, encryption_key: service.encryption_key }, { ...customerNode, kind: 'self' }],
  });
  t.match(asked, { owner: org.id, customerNodeId: self.node_id }, 'the coordinator is told which enrolled node to propose');
  t.equal((await call('GET', '/v1/committees?tier=cold')).statusCode, 400);
  // A pinned node: the coordinator is asked for that one.
  const second = identity();
  t.equal((await call('POST', '/v1/nodes', { kind: 'self', node_id: second.node_id, signing_key: second.signing_key, encryption_key: second.encryption_key })).statusCode, 201);
  t.equal((await call('GET', `/v1/committees?tier=self&customer_node=${second.node_id}`)).statusCode, 200);
  t.match(asked, { customerNodeId: second.node_id }, 'the pinned node is proposed');
  t.equal((await call('GET', `/v1/committees?tier=hosted&customer_node=${second.node_id}`)).statusCode, 400, 'no customer node for hosted');
  const stranger = await call('GET', `/v1/committees?tier=self&customer_node=${identity().node_id}`);
  t.equal(stranger.statusCode, 409, 'a node the organization did not enrol');
  t.equal(stranger.json().code, 'no_enrolled_node');
});

t.test('without a coordinator there is no proposal', async (t) => {
  const { call } = await setup(t);
  const res = await call('GET', '/v1/committees?tier=hosted');
  t.equal(res.statusCode, 503);
  t.equal(res.json().code, 'unavailable');
});

t.test('POST /v1/vaults takes the committee and customer node, and refuses inconsistent ones', async (t) => {
  const { call, store } = await setup(t);
  const unenrolled = await call('POST', '/v1/vaults', { tier: 'self', committee: [service.node_id, self.node_id], customer_node: customerNode });
  t.equal(unenrolled.statusCode, 409, 'a customer node that is not enrolled');
  t.match(unenrolled.json(), { code: 'no_enrolled_node', error: /not enrolled/ });
  t.equal((await call('POST', '/v1/nodes', { kind: 'self', ...customerNode })).statusCode, 201);
  const other = identity();
  const wrongKeys = await call('POST', '/v1/vaults', { tier: 'self', customer_node: { ...customerNode, encryption_key: other.encryption_key } });
  t.equal(wrongKeys.statusCode, 400, 'the enrolled id with other keys');
  t.match(wrongKeys.json().error, /other keys than node/);
  const tee = await call('POST', '/v1/vaults', { tier: 'customer_tee', customer_node: customerNode });
  t.equal(tee.statusCode, 409, 'a self node for a customer_tee vault');
  t.match(tee.json().error, /needs a tee node/);
  const ok = await call('POST', '/v1/vaults', { tier: 'self', committee: [service.node_id, self.node_id], customer_node: customerNode });
  t.equal(ok.statusCode, 202);
  const stored = await store.get<VaultRecord>('vaults', ok.json().id);
  t.equal(stored?.customer_node_id, self.node_id, 'the vault keeps the node to seat');
  t.ok(stored?.creation_request && Buffer.from(stored.creation_request, 'hex').includes(Buffer.from(self.signing_key)), 'the signed request names the customer node');
  const rows: [string, unknown, RegExp][] = [
    ['customer node on a hosted vault', { tier: 'hosted', customer_node: customerNode }, /self and customer_tee/],
    ['customer node outside the committee', { tier: 'self', committee: [service.node_id], customer_node: customerNode }, /not in the committee/],
    ['node id not derived from the key', { tier: 'self', customer_node: { ...customerNode, node_id: service.node_id } }, /derived/],
    ['a node twice', { tier: 'hosted', committee: [service.node_id, service.node_id] }, /twice/],
    ['not a node id', { tier: 'hosted', committee: ['node-1'] }, /committee/],
    ['extra member in customer_node', { tier: 'self', customer_node: { ...customerNode, kind: 'self' } }, /customer_node|Unexpected/],
  ];
  for (const [name, body, message] of rows) {
    const res = await call('POST', '/v1/vaults', body);
    t.equal(res.statusCode, 400, name);
    t.equal(res.json().code, 'invalid_request', name);
    t.match(res.json().error, message, name);
  }
  t.equal((await store.byIndex<VaultRecord>('vaults', '')).length, 1, 'nothing else was created');
});

t.test('a reshare keeps the customer\'s signed request for the nodes', async (t) => {
  const { call, store, vaults, org } = await setup(t);
  const created = await vaults.createVault(org.id, { tier: 'hosted' });
  await store.batch([vaults.vaultOp({ ...created, state: 'active' })]);
  t.equal((await call('POST', `/v1/vaults/${created.id}/reshare`, { target_tier: 'hosted', customer_node: customerNode })).statusCode, 400, 'a customer node for a hosted target');
  t.equal((await call('POST', `/v1/vaults/${created.id}/reshare`, { target_tier: 'self' })).statusCode, 409, 'no enrolled self node to move to');
  t.equal((await call('POST', '/v1/nodes', { kind: 'self', ...customerNode })).statusCode, 201);
  const res = await call('POST', `/v1/vaults/${created.id}/reshare`, { target_tier: 'self', customer_node: customerNode });
  t.equal(res.statusCode, 202);
  const job = await store.get<JobRecord>('jobs', res.json().id);
  t.match(job, { kind: 'reshare', target_tier: 'self', customer_node_id: self.node_id });
  t.ok(job?.reshare_request && Buffer.from(job.reshare_request, 'hex').includes(Buffer.from(`/v1/vaults/${created.id}/reshare`)), 'the signed reshare request is kept');
});
