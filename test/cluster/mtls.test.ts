// Mutual TLS between nodes and the coordinator: a node with a certificate from the cluster's CA
// attaches; one whose certificate another CA signed never does. Certificates are made with openssl.
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Cluster } from './cluster-harness.ts';
import { connectCoordinator, attachedNodes } from '../../api/coordinator/coordinator-client.ts';

function openssl(dir: string, args: string[]) {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

function makeCa(dir: string, name: string) {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`]);
}

function makeCert(dir: string, ca: string, name: string, san: string) {
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\n`);
  openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
  openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`]);
}

t.test('only nodes with a certificate from the cluster CA attach over mutual TLS', async (t) => {
  const cluster = new Cluster();
  t.teardown(() => cluster.stop());
  const d = cluster.dir;
  makeCa(d, 'ca');
  makeCa(d, 'rogue-ca');
  makeCert(d, 'ca', 'coordinator', 'IP:127.0.0.1');
  makeCert(d, 'ca', 'node', 'DNS:node');
  makeCert(d, 'rogue-ca', 'rogue', 'DNS:rogue');
  const coordinator = await cluster.startCoordinator({
    COORDINATOR_TLS_CERT: join(d, 'coordinator.pem'), COORDINATOR_TLS_KEY: join(d, 'coordinator.key'), COORDINATOR_TLS_CLIENT_CA: join(d, 'ca.pem'),
  });
  t.ok(coordinator.lines.some((l) => l.msg === 'mutual TLS on the coordinator port'), 'coordinator runs mutual TLS');
  const good = await cluster.startNode('node-ok', { NODE_TLS_CA: join(d, 'ca.pem'), NODE_TLS_CERT: join(d, 'node.pem'), NODE_TLS_KEY: join(d, 'node.key') });
  t.ok(good.nodeId, 'a node with a cluster certificate attaches');
  t.notOk(good.proc.lines.some((l) => /plaintext/.test(l.msg)), 'no plaintext warning');

  const rogue = cluster.spawn('node-rogue', 'node/main.ts', {
    NODE_COORDINATOR: `127.0.0.1:${cluster.coordinatorPort}`, NODE_DATA_DIR: join(d, 'node-rogue'), NODE_DEVELOPMENT: 'true', NODE_RECONNECT_MIN_MS: '50', NODE_RECONNECT_MAX_MS: '200',
    NODE_TLS_CA: join(d, 'ca.pem'), NODE_TLS_CERT: join(d, 'rogue.pem'), NODE_TLS_KEY: join(d, 'rogue.key'),
  });
  await rogue.waitFor((l) => l.msg === 'identity created', 20_000, 'rogue start');
  await new Promise((r) => setTimeout(r, 2500));
  t.notOk(rogue.lines.some((l) => l.msg === 'attached to coordinator'), 'a node with a foreign certificate never attaches');

  const client = connectCoordinator({ address: `127.0.0.1:${cluster.coordinatorPort}`, tlsCa: join(d, 'ca.pem'), tlsCert: join(d, 'node.pem'), tlsKey: join(d, 'node.key') });
  t.teardown(() => client.close());
  t.same((await attachedNodes(client)).map((n) => n.id), [good.nodeId], 'the coordinator lists only the good node');
});
