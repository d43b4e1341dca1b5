// The foundation cluster as real processes on loopback: coordinator, three signer nodes and the API.
// Nodes come and go; a node keeps its id across restarts; a node with a bad identity signature is
// refused and the refusal is logged; everything stops with no process left behind.
import t from 'tap';
import * as grpc from '@grpc/grpc-js';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { randomBytes } from 'node:crypto';
import { Cluster, waitUntil } from './cluster-harness.ts';
import { createClient } from '../../proto/grpc.ts';
import { NodeLinkService, NodeKind, type AttachResponse } from '../../proto/gen/mpc/v1/node_link_pb.ts';
import { connectCoordinator, attachedNodes } from '../../api/coordinator/coordinator-client.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { attachMessage, LINK_VERSION } from '../../core/link/attach.ts';

interface Ready {
  status: string;
  coordinator: string;
  nodes: { id: string; kind: string }[];
  node_count: number;
}

t.test('three nodes attach, one dies and returns with the same id, all stop cleanly', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const coordinator = await cluster.startCoordinator();
  const started = await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n)));
  const ids = started.map((s) => s.nodeId).sort();
  t.equal(new Set(ids).size, 3, 'three distinct node ids');
  const api = await cluster.startApi();

  const readyz = async (): Promise<{ status: number; body: Ready }> => {
    const res = await fetch(`http://127.0.0.1:${cluster.apiPort}/readyz`);
    return { status: res.status, body: (await res.json()) as Ready };
  };
  await waitUntil(async () => (await readyz()).body.node_count === 3, 20_000, 'three nodes in /readyz');
  const ready = await readyz();
  t.equal(ready.status, 200);
  t.equal(ready.body.coordinator, 'reachable');
  t.same(ready.body.nodes.map((n) => n.id).sort(), ids, '/readyz lists the attached nodes by id');
  t.ok(ready.body.nodes.every((n) => n.kind === 'service'), 'by kind');

  // Kill node-2 outright: it leaves the attached set.
  const victim = started[1]!;
  await victim.proc.kill('SIGKILL');
  await waitUntil(async () => !(await readyz()).body.nodes.some((n) => n.id === victim.nodeId), 20_000, 'killed node gone from /readyz');
  t.equal((await readyz()).body.node_count, 2, 'two nodes left');

  // Restart it on the same data directory: same identity, same id.
  const again = await cluster.startNode('node-2');
  t.equal(again.nodeId, victim.nodeId, 'the restarted node keeps its id');
  t.match(again.proc.lines.find((l) => l.msg === 'identity loaded'), { created: false }, 'identity was loaded, not created');
  await waitUntil(async () => (await readyz()).body.node_count === 3, 20_000, 'node back in /readyz');

  // Coordinator gone: readiness says so, nodes redial when it returns.
  await coordinator.kill('SIGTERM');
  await waitUntil(async () => (await readyz()).status === 503, 20_000, '/readyz 503 without coordinator');
  t.equal((await readyz()).body.coordinator, 'unreachable');
  await cluster.startCoordinator();
  await waitUntil(async () => (await readyz()).body.node_count === 3, 30_000, 'nodes redial a restarted coordinator');
  t.pass('nodes redialed the restarted coordinator');

  // Clean stop: every process exits on SIGTERM with status 0.
  const exits = await Promise.all(cluster.procs.filter((p) => p.running).map(async (p) => ({ name: p.name, ...(await p.kill('SIGTERM')) })));
  for (const e of exits) t.equal(e.code, 0, `${e.name} exited cleanly`);
  t.ok(cluster.procs.every((p) => !p.running), 'no process left behind');
  void api;
});

t.test('a node presenting a wrong identity signature is refused, and the refusal is logged', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const coordinator = await cluster.startCoordinator();
  const address = `127.0.0.1:${cluster.coordinatorPort}`;
  const client = createClient(NodeLinkService, address, grpc.credentials.createInsecure());
  t.teardown(() => client.close());

  const signingSecret = new Uint8Array(randomBytes(32));
  const signingKey = ed25519.getPublicKey(signingSecret);
  const encryptionKey = x25519.getPublicKey(new Uint8Array(randomBytes(32)));
  const nodeId = nodeIdFor(signingKey);

  async function attempt(hello: { nodeId: string; signingKey: Uint8Array }, sign: (m: Uint8Array) => Uint8Array): Promise<AttachResponse[]> {
    const stream = client.attach();
    const got: AttachResponse[] = [];
    return new Promise((resolve) => {
      stream.on('data', (m: AttachResponse) => {
        got.push(m);
        if (m.body.case === 'challenge') {
          const c = m.body.value;
          const msg = attachMessage({
            coordinatorId: c.coordinatorId, connectionId: c.connectionId, nonce: c.nonce, nodeId: hello.nodeId,
            kind: NodeKind.SERVICE, owner: '', signingKey: hello.signingKey, encryptionKey,
          });
          stream.write({ body: { case: 'response', value: { signature: sign(msg) } } });
        }
      });
      stream.on('end', () => resolve(got));
      stream.on('error', () => resolve(got));
      stream.write({ body: { case: 'hello', value: { version: LINK_VERSION, nodeId: hello.nodeId, kind: NodeKind.SERVICE, owner: '', signingKey: hello.signingKey, encryptionKey, software: 'test' } } });
    });
  }

  // Signed by another key than the one presented.
  const other = new Uint8Array(randomBytes(32));
  const forged = await attempt({ nodeId, signingKey }, (m) => ed25519.sign(m, other));
  const refusal = forged.find((m) => m.body.case === 'refusal');
  t.ok(refusal, 'refused');
  t.equal(refusal?.body.case === 'refusal' && refusal.body.value.code, 'bad_signature');
  t.notOk(forged.some((m) => m.body.case === 'welcome'), 'never welcomed');
  const logged = await coordinator.waitFor((l) => l.level === 40 && l.msg.startsWith('node refused') && l['code'] === 'bad_signature');
  t.equal(logged['nodeId'], nodeId, 'the refusal names the node');

  // An id that is not derived from the key.
  const wrongId = await attempt({ nodeId: 'n' + '0'.repeat(20), signingKey }, (m) => ed25519.sign(m, signingSecret));
  const wrongIdRefusal = wrongId.find((m) => m.body.case === 'refusal');
  t.equal(wrongIdRefusal?.body.case === 'refusal' && wrongIdRefusal.body.value.code, 'bad_hello', 'an id not derived from the key is refused');

  // The same identity signing correctly is welcomed, and appears in the coordinator's list.
  const good = await new Promise<AttachResponse[]>((resolve) => {
    const stream = client.attach();
    const got: AttachResponse[] = [];
    stream.on('data', (m: AttachResponse) => {
      got.push(m);
      if (m.body.case === 'challenge') {
        const c = m.body.value;
        stream.write({ body: { case: 'response', value: { signature: ed25519.sign(attachMessage({ coordinatorId: c.coordinatorId, connectionId: c.connectionId, nonce: c.nonce, nodeId, kind: NodeKind.SERVICE, owner: '', signingKey, encryptionKey }), signingSecret) } } });
      }
      if (m.body.case === 'welcome') {
        stream.cancel();
        resolve(got);
      }
    });
    stream.on('error', () => resolve(got));
    stream.write({ body: { case: 'hello', value: { version: LINK_VERSION, nodeId, kind: NodeKind.SERVICE, owner: '', signingKey, encryptionKey, software: 'test' } } });
  });
  t.ok(good.some((m) => m.body.case === 'welcome'), 'a correct signature is welcomed');

  // A node that attaches and then says nothing is dropped after five heartbeat ticks without a word.
  const silentEnded = new Promise<number>((resolve) => {
    const stream = client.attach();
    let welcomedAt = 0;
    stream.on('data', (m: AttachResponse) => {
      if (m.body.case === 'challenge') {
        const c = m.body.value;
        stream.write({ body: { case: 'response', value: { signature: ed25519.sign(attachMessage({ coordinatorId: c.coordinatorId, connectionId: c.connectionId, nonce: c.nonce, nodeId, kind: NodeKind.SERVICE, owner: '', signingKey, encryptionKey }), signingSecret) } } });
      }
      if (m.body.case === 'welcome') welcomedAt = Date.now();
    });
    const done = () => resolve(welcomedAt ? Date.now() - welcomedAt : -1);
    stream.on('end', done);
    stream.on('error', done);
    stream.write({ body: { case: 'hello', value: { version: LINK_VERSION, nodeId, kind: NodeKind.SERVICE, owner: '', signingKey, encryptionKey, software: 'test' } } });
  });
  const silentFor = await silentEnded;
  t.ok(silentFor >= 5 * 500, `a silent node is dropped, not before five heartbeat intervals (${silentFor} ms)`);
  await coordinator.waitFor((l) => l.msg.startsWith('node silent for 5 heartbeats') && l['nodeId'] === nodeId, 5000, 'the drop is logged');

  const coord = connectCoordinator({ address });
  t.teardown(() => coord.close());
  await waitUntil(async () => (await attachedNodes(coord)).length === 0, 10_000, 'cancelled stream detaches');
  t.pass('a cancelled stream leaves the attached set');
});
