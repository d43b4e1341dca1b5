// The command-line client's customer-node commands (api/sdk/cli.ts: node-config, nodes, tee
// measurements, and --customer-node on vault create and reshare) as a child process against a loopback
// HTTP double of those routes. The double verifies every request's RFC 9421 signature under the
// configured API key with the API's own verifier, checks each body against the route's schema
// (core/api-schemas/), records what arrived and answers as the contract says; usage errors must answer
// before any request reaches it.
import t from 'tap';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { Value } from '@sinclair/typebox/value';
import type { TSchema } from '@sinclair/typebox';
import { loopbackServer } from '../adapters/loopback-server.ts';
import { verifyRequest } from '../../../core/http/http-signature.ts';
import { verifyContentDigest } from '../../../core/http/content-digest.ts';
import { nodeIdFor } from '../../../core/trust/node-id.ts';
import { EnrolNodeBody, TeeMeasurementsBody } from '../../../core/api-schemas/nodes.ts';
import { CreateVaultBody, ReshareVaultBody } from '../../../core/api-schemas/vaults.ts';
import { runCli, type Run } from './run-cli.ts';

// Each command is a fresh Node process that loads the SDK; on a busy machine that takes seconds.
t.setTimeout(300_000);

const dir = mkdtempSync(join(tmpdir(), 'cli-nodes-'));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const ORG = 'org_0123456789abcdef01234567';
const KEY_ID = 'key_0123456789abcdef01234567';
const secret = ed25519.utils.randomSecretKey();
const secretFile = join(dir, 'key.hex');
writeFileSync(secretFile, bytesToHex(secret) + '\n', { mode: 0o600 });

interface Call {
  method: string;
  path: string;
  body: unknown;
}
/** Every signed request that reached the double, in order. */
const calls: Call[] = [];
/** The answer to `METHOD /path`: a status and a JSON body. */
const replies = new Map<string, [number, unknown]>();
/** What each route's body must satisfy, as the route validates it. */
const BODIES: Record<string, TSchema> = {
  'POST /v1/nodes': EnrolNodeBody, 'PUT /v1/tee/measurements': TeeMeasurementsBody, 'POST /v1/vaults': CreateVaultBody,
};

const origin = await loopbackServer(t, (req, raw, res) => {
  const answer = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const method = req.method ?? '';
  const path = req.url ?? '';
  try {
    if (raw.length > 0 && !verifyContentDigest(String(req.headers['content-digest']), raw)) throw new Error('Content-Digest does not match the body');
    const v = verifyRequest({ method, url: origin + path, headers: req.headers }, (id) => (id === KEY_ID ? ed25519.getPublicKey(secret) : undefined), Math.floor(Date.now() / 1000), {
      requiredComponents: raw.length > 0 ? ['@method', '@target-uri', 'content-digest'] : ['@method', '@target-uri'],
      requiredParams: ['created', 'expires', 'nonce', 'keyid'], maxValiditySeconds: 300, skewSeconds: 30,
    });
    if (v.keyId !== KEY_ID) throw new Error('signed by another key');
  } catch (err) {
    return answer(401, { error: `request signature refused: ${(err as Error).message}`, code: 'unauthorized' });
  }
  const body = raw.length ? JSON.parse(raw.toString('utf8')) as unknown : undefined;
  calls.push({ method, path, body });
  const route = `${method} ${path.split('?')[0]}`;
  const schema = BODIES[route] ?? (/^POST \/v1\/vaults\/[^/]+\/reshare$/.test(route) ? ReshareVaultBody : undefined);
  if (schema && !Value.Check(schema, body)) return answer(400, { error: `body does not match ${route}`, code: 'invalid_request' });
  const reply = replies.get(`${method} ${path}`);
  return reply ? answer(...reply) : answer(404, { error: 'not found', code: 'not_found' });
});
const settings = { CUSTODY_URL: origin, CUSTODY_ORGANIZATION: ORG, CUSTODY_KEY_ID: KEY_ID, CUSTODY_SECRET_KEY_FILE: secretFile };

const cli = (args: string[], env: Record<string, string> = settings): Promise<Run> => runCli(args, env);

/** A node identity file exactly as `npm run node-identity` prints it. */
function identity(name: string, kind = 'self'): { file: string; nodeId: string; signingKey: string; encryptionKey: string } {
  const sk = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
  const ek = x25519.getPublicKey(x25519.utils.randomSecretKey());
  const nodeId = nodeIdFor(sk);
  const file = join(dir, `${name}.identity.json`);
  writeFileSync(file, JSON.stringify({ node_id: nodeId, signing_key: bytesToHex(sk), encryption_key: bytesToHex(ek), kind, created: true }) + '\n');
  return { file, nodeId, signingKey: bytesToHex(sk), encryptionKey: bytesToHex(ek) };
}

function nodeRecord(n: { nodeId: string; signingKey: string; encryptionKey: string }, extra: Record<string, unknown> = {}) {
  return {
    id: n.nodeId, kind: 'self', signing_key: n.signingKey, encryption_key: n.encryptionKey, label: null, state: 'active', pcrs: null,
    attached: false, created_at: '2026-01-01T00:00:00.000Z', revoked_at: null, ...extra,
  };
}

const mine = identity('mine');
const serviceIdentity = identity('service', 'service');
const serviceNode = { node_id: 'n' + 'a'.repeat(20), kind: 'service', signing_key: 'bb'.repeat(32), encryption_key: 'cc'.repeat(32) };

t.test('node-config prints the coordinator address, operator keys and organization', async (t) => {
  const setup = { coordinator_address: 'coordinator.example.com:7400', operator_keys: ['ab'.repeat(32)], organization: ORG };
  replies.set('GET /v1/node-config', [200, setup]);
  const r = await cli(['node-config']);
  t.equal(r.code, 0, r.stderr);
  t.same(r.out, setup);
  t.same(calls.at(-1), { method: 'GET', path: '/v1/node-config', body: undefined });
});

t.test('nodes enrol sends the identity file\'s keys with the kind and label, and prints the node', async (t) => {
  replies.set('POST /v1/nodes', [201, nodeRecord(mine, { label: 'rack 4' })]);
  const r = await cli(['nodes', 'enrol', '--kind', 'self', '--identity', mine.file, '--label', 'rack 4']);
  t.equal(r.code, 0, r.stderr);
  t.match(r.out, { id: mine.nodeId, kind: 'self', state: 'active', label: 'rack 4' });
  t.same(calls.at(-1), {
    method: 'POST', path: '/v1/nodes',
    body: { kind: 'self', node_id: mine.nodeId, signing_key: mine.signingKey, encryption_key: mine.encryptionKey, label: 'rack 4' },
  }, 'only the identity\'s keys travel, not the file\'s other fields');
});

t.test('nodes enrol --kind tee sends the attestation file\'s bytes as base64', async (t) => {
  const enclave = identity('enclave', 'tee');
  const doc = randomBytes(700);
  const docFile = join(dir, 'attestation.cbor');
  writeFileSync(docFile, doc);
  replies.set('POST /v1/nodes', [201, nodeRecord(enclave, { kind: 'tee', pcrs: { 0: 'aa'.repeat(48) } })]);
  const r = await cli(['nodes', 'enrol', '--kind', 'tee', '--identity', enclave.file, '--attestation-file', docFile]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.out, { id: enclave.nodeId, kind: 'tee' });
  const body = calls.at(-1)!.body as Record<string, unknown>;
  t.equal(body.kind, 'tee');
  t.same(Buffer.from(body.attestation as string, 'base64'), doc, 'the document arrives byte for byte');
});

t.test('an enrolment the API refuses prints its code and status and exits 4 (conflict)', async (t) => {
  replies.set('POST /v1/nodes', [409, { error: 'this node is enrolled by another organization', code: 'node_taken' }]);
  const r = await cli(['nodes', 'enrol', '--kind', 'self', '--identity', mine.file]);
  t.equal(r.code, 4, 'a conflict: exit 4');
  t.same(r.err, { error: 'this node is enrolled by another organization', code: 'node_taken', status: 409, hint: 'read the record again and retry with what it says now (an Idempotency-Key reused with another body is a conflict)' });
  t.equal(r.stdout, '', 'nothing on stdout');
});

t.test('a request signed by another key is refused by the double: it checks what the API checks', async (t) => {
  const otherFile = join(dir, 'other-key.hex');
  writeFileSync(otherFile, bytesToHex(ed25519.utils.randomSecretKey()) + '\n', { mode: 0o600 });
  const before = calls.length;
  const r = await cli(['nodes', 'list'], { ...settings, CUSTODY_SECRET_KEY_FILE: otherFile });
  t.equal(r.code, 3);
  t.match(r.err, { code: 'unauthorized', status: 401 });
  t.equal(calls.length, before);
});

t.test('nodes list and nodes revoke', async (t) => {
  replies.set('GET /v1/nodes', [200, { nodes: [nodeRecord(mine, { attached: true })] }]);
  const list = await cli(['nodes', 'list']);
  t.equal(list.code, 0, list.stderr);
  t.match(list.out, { nodes: [{ id: mine.nodeId, attached: true }] });
  t.same(calls.at(-1), { method: 'GET', path: '/v1/nodes', body: undefined });

  replies.set(`POST /v1/nodes/${mine.nodeId}/revoke`, [200, nodeRecord(mine, { state: 'revoked', revoked_at: '2026-01-02T00:00:00.000Z' })]);
  const revoked = await cli(['nodes', 'revoke', mine.nodeId]);
  t.equal(revoked.code, 0, revoked.stderr);
  t.match(revoked.out, { id: mine.nodeId, state: 'revoked' });
  t.same(calls.at(-1), { method: 'POST', path: `/v1/nodes/${mine.nodeId}/revoke`, body: undefined }, 'no body');
});

t.test('tee measurements put sends the file, get reads them back; none yet is a 404', async (t) => {
  replies.delete('GET /v1/tee/measurements');
  const none = await cli(['tee', 'measurements', 'get']);
  t.equal(none.code, 4);
  t.match(none.err, { code: 'not_found', status: 404 });

  const allowed = { version: 1, allowed: [{ 0: '11'.repeat(48), 8: '22'.repeat(48) }] };
  const file = join(dir, 'measurements.json');
  writeFileSync(file, JSON.stringify(allowed));
  const stored = { ...allowed, updated_at: '2026-01-01T00:00:00.000Z' };
  replies.set('PUT /v1/tee/measurements', [200, stored]);
  const put = await cli(['tee', 'measurements', 'put', '--file', file]);
  t.equal(put.code, 0, put.stderr);
  t.same(put.out, stored);
  t.same(calls.at(-1), { method: 'PUT', path: '/v1/tee/measurements', body: allowed });

  replies.set('GET /v1/tee/measurements', [200, stored]);
  const got = await cli(['tee', 'measurements', 'get']);
  t.equal(got.code, 0, got.stderr);
  t.same(got.out, stored);
});

t.test('vault create and reshare --customer-node bind the node when the proposed committee seats it', async (t) => {
  const proposal = {
    tier: 'self', threshold: 2, roster_version: 1,
    members: [serviceNode, { node_id: mine.nodeId, kind: 'self', signing_key: mine.signingKey, encryption_key: mine.encryptionKey }],
  };
  // The SDK asks for the committee with the pinned node.
  replies.set(`GET /v1/committees?tier=self&customer_node=${mine.nodeId}`, [200, proposal]);
  const vault = { id: 'vlt_1', tier: 'self', state: 'creating' };
  replies.set('POST /v1/vaults', [202, vault]);
  const created = await cli(['vault', 'create', '--tier', 'self', '--customer-node', mine.file]);
  t.equal(created.code, 0, created.stderr);
  t.same(created.out, vault);
  const customerNode = { node_id: mine.nodeId, signing_key: mine.signingKey, encryption_key: mine.encryptionKey };
  t.same(calls.at(-1), { method: 'POST', path: '/v1/vaults', body: { tier: 'self', customer_node: customerNode, committee: [serviceNode.node_id, mine.nodeId] } });

  replies.set('POST /v1/vaults/vlt_1/reshare', [202, { id: 'rsh_1', status: 'accepted' }]);
  // The request binds the vault's current rotation, which the SDK reads first.
  replies.set('GET /v1/vaults/vlt_1', [200, { ...vault, state: 'active', rotation: 3 }]);
  const reshared = await cli(['vault', 'reshare', 'vlt_1', '--target-tier', 'self', '--customer-node', mine.file]);
  t.equal(reshared.code, 0, reshared.stderr);
  t.same(calls.at(-1), { method: 'POST', path: '/v1/vaults/vlt_1/reshare', body: { target_tier: 'self', rotation: 3, customer_node: customerNode, committee: [serviceNode.node_id, mine.nodeId] } });

  const other = identity('other');
  // A proposal that seats another node than the one pinned (a service that ignores the pin) is refused.
  replies.set(`GET /v1/committees?tier=self&customer_node=${other.nodeId}`, [200, proposal]);
  const before = calls.length;
  const refused = await cli(['vault', 'reshare', 'vlt_1', '--target-tier', 'self', '--customer-node', other.file]);
  t.equal(refused.code, 4, 'a conflict (409 committee_mismatch, raised by the SDK): exit 4');
  t.match(refused.err, { code: 'committee_mismatch', error: new RegExp(other.nodeId) });
  t.same(calls.slice(before).map((c) => `${c.method} ${c.path}`), ['GET /v1/vaults/vlt_1', `GET /v1/committees?tier=self&customer_node=${other.nodeId}`], 'the reshare is not sent');
});

t.test('usage errors answer before any request: exit 2, status null', async (t) => {
  const notIdentity = join(dir, 'not-identity.json');
  writeFileSync(notIdentity, JSON.stringify({ node_id: 'n1', signing_key: 'zz' }));
  const docFile = join(dir, 'doc.bin');
  writeFileSync(docFile, randomBytes(16));
  const emptyFile = join(dir, 'empty.bin');
  writeFileSync(emptyFile, '');
  const cases: [string, string[], RegExp][] = [
    ['kind not self or tee', ['nodes', 'enrol', '--kind', 'service', '--identity', mine.file], /--kind must be self or tee/],
    ['no identity', ['nodes', 'enrol', '--kind', 'self'], /nodes enrol needs --identity/],
    ['identity file missing', ['nodes', 'enrol', '--kind', 'self', '--identity', join(dir, 'absent.json')], /--identity: cannot read JSON/],
    ['identity file of another shape', ['nodes', 'enrol', '--kind', 'self', '--identity', notIdentity], /is not a node identity as npm run node-identity prints it/],
    ['attestation for a self node', ['nodes', 'enrol', '--kind', 'self', '--identity', mine.file, '--attestation-file', docFile], /--attestation-file goes with --kind tee/],
    ['tee without attestation', ['nodes', 'enrol', '--kind', 'tee', '--identity', mine.file], /--kind tee needs --attestation-file/],
    ['empty attestation', ['nodes', 'enrol', '--kind', 'tee', '--identity', identity('usage-tee', 'tee').file, '--attestation-file', emptyFile], /is empty/],
    ['identity printed by a node of another kind', ['nodes', 'enrol', '--kind', 'tee', '--identity', mine.file, '--attestation-file', docFile], /was printed by a node configured as self: set its kind \(NODE_KIND\) to tee/],
    ['identity printed by a service node', ['nodes', 'enrol', '--kind', 'self', '--identity', serviceIdentity.file], /configured as service/],
    ['revoke without a node id', ['nodes', 'revoke'], /nodes revoke takes <nodeId>/],
    ['list with an argument', ['nodes', 'list', 'x'], /nodes list takes no arguments/],
    ['node-config with an option', ['node-config', '--tier', 'self'], /node-config does not take --tier/],
    ['measurements without a file', ['tee', 'measurements', 'put'], /tee measurements put needs --file/],
    ['measurements file not JSON', ['tee', 'measurements', 'put', '--file', docFile], /--file: cannot read JSON/],
    ['unknown measurements command', ['tee', 'measurements', 'delete'], /unknown command: tee measurements/],
    ['a group word alone', ['nodes'], /unknown command: nodes/],
    ['customer node on a hosted vault', ['vault', 'create', '--tier', 'hosted', '--customer-node', mine.file], /--customer-node goes with --tier self or customer_tee/],
    ['customer node on a reshare without a target tier', ['vault', 'reshare', 'vlt_1', '--customer-node', mine.file], /--customer-node goes with --target-tier self or customer_tee/],
  ];
  const before = calls.length;
  const runs = await Promise.all(cases.map(([, args]) => cli(args)));
  cases.forEach(([what, , message], i) => {
    const r = runs[i]!;
    t.equal(r.code, 2, what);
    t.match(r.err, { code: 'usage', status: null, error: message }, what);
    t.equal(r.stdout, '', `${what}: nothing on stdout`);
  });
  t.equal(calls.length, before, 'no request reached the API');
});
