// The rules by which a trust log changes what a node trusts of an organization (docs/trust.md), one
// test per rule: operator bootstrap, registration and revocation by signed requests, replays that
// change nothing, the end-user auth config by recency, creation proofs, and every refusal.
import t from 'tap';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { apiKeyId } from '../../core/trust/api-key-id.ts';
import { signBootstrap, TrustEntryError } from '../../core/trust/trust-entry.ts';
import { activeKey, applyTrustLog, emptyTrust, enrolledNode, measurementsAllowed, verifyCreationRequest, type OrgTrust, type TrustContext } from '../../node/runtime/authorization/trust-state.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_trust';
const operator = seed('operator');
const ctx: TrustContext = { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))] };
const first = signer(ORG, seed('first api key'));
const second = signer(ORG, seed('second api key'));
const bootstrap = signBootstrap(ORG, first.publicKey, 1_795_000_000, operator);
const addSecond = signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey, label: 'deploy' });
const JWKS = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo', kid: 'k1' }] };

const apply = (s: OrgTrust, ...log: Uint8Array[]) => applyTrustLog(s, log, ctx).state;
const rooted = () => apply(emptyTrust(ORG), bootstrap);
const active = (s: OrgTrust, id: string) => activeKey(s, undefined, id) !== undefined;

t.test('an operator bootstrap roots the organization with its first key', async (t) => {
  const s = rooted();
  t.ok(active(s, first.keyId), 'the bootstrap key is active');
  t.equal(first.keyId, apiKeyId(ORG, first.publicKey));
  t.equal(s.applied.length, 1);
  t.ok(s.bootstrap);
  const again = applyTrustLog(s, [bootstrap], ctx);
  t.notOk(again.changed, 'an applied entry is skipped');
});

t.test('a bootstrap signed by a key that is not one of this node\'s operator keys is refused', async (t) => {
  const forged = signBootstrap(ORG, first.publicKey, 1_795_000_000, seed('not the operator'));
  t.throws(() => apply(emptyTrust(ORG), forged), { name: 'TrustEntryError', code: 'bad_trust_log', message: /not signed by an operator key/ });
  t.throws(() => applyTrustLog(emptyTrust(ORG), [bootstrap], { operatorKeys: [] }), /not signed by an operator key/, 'no operator keys, no bootstrap');
  // A bad signature under the right operator key.
  const bad = Uint8Array.from(bootstrap);
  bad[bad.length - 1]! ^= 1;
  t.throws(() => apply(emptyTrust(ORG), bad), /not signed by an operator key/);
});

t.test('a second, different bootstrap for a rooted organization is refused', async (t) => {
  const other = signBootstrap(ORG, second.publicKey, 1_795_000_500, operator);
  t.throws(() => apply(rooted(), other), /bootstrapped already/);
  t.throws(() => apply(emptyTrust(ORG), bootstrap, other), /bootstrapped already/, 'also within one log');
  t.throws(() => apply(emptyTrust('org_other'), bootstrap), /in the log of org_other/, 'a bootstrap belongs to its own organization');
});

t.test('POST /v1/api-keys signed by an active key adds the derived key id', async (t) => {
  const s = apply(rooted(), addSecond);
  t.ok(active(s, second.keyId));
  t.equal(s.keys[second.keyId]!.label, 'deploy');
  t.same(activeKey(s, undefined, second.keyId), ed25519.getPublicKey(second.secret));
  // A key added in the log signs later entries of the same log.
  const third = signer(ORG, seed('third'));
  const s2 = apply(rooted(), addSecond, signedEntry(second, 'POST', '/v1/api-keys', { public_key: third.publicKey }));
  t.ok(active(s2, third.keyId));
});

t.test('an entry signed by a key the organization does not have is refused', async (t) => {
  const stranger = signer(ORG, seed('stranger'));
  t.throws(() => apply(rooted(), signedEntry(stranger, 'POST', '/v1/api-keys', { public_key: stranger.publicKey })), { code: 'bad_trust_log', message: /entry 0: .*unknown or revoked key/ });
  const otherOrg = signer('org_other', seed('first api key'));
  t.throws(() => apply(rooted(), signedEntry(otherOrg, 'POST', '/v1/api-keys', { public_key: second.publicKey })), /unknown or revoked/, 'another organization\'s key id');
  t.throws(() => apply(emptyTrust(ORG), addSecond), /unknown or revoked/, 'nothing before the bootstrap');
});

t.test('a revoked key signs nothing more, and revocation is permanent', async (t) => {
  const revoke = signedEntry(first, 'POST', `/v1/api-keys/${second.keyId}/revoke`);
  const s = apply(rooted(), addSecond, revoke);
  t.notOk(active(s, second.keyId), 'revoked');
  t.equal(s.keys[second.keyId]!.revoked, true);
  t.throws(() => apply(s, signedEntry(second, 'POST', '/v1/api-keys', { public_key: bytesToHex(ed25519.getPublicKey(seed('x'))) })), /unknown or revoked/, 'the revoked key signs no entry');
  // The replayed registration (same bytes) is skipped; a fresh registration of the same key changes nothing.
  const replayed = applyTrustLog(s, [bootstrap, addSecond, revoke], ctx);
  t.notOk(replayed.changed);
  const reAdd = apply(s, signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey }));
  t.notOk(active(reAdd, second.keyId), 'a revoked key id is never re-added');
  // A key can revoke an id the node never saw: it stays revoked when registered later.
  const ahead = signer(ORG, seed('ahead'));
  const s3 = apply(rooted(), signedEntry(first, 'POST', `/v1/api-keys/${ahead.keyId}/revoke`), signedEntry(first, 'POST', '/v1/api-keys', { public_key: ahead.publicKey }));
  t.notOk(active(s3, ahead.keyId));
});

t.test('the end-user auth config changes only to a newer one', async (t) => {
  const newer = signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: JWKS, audience: 'aud-new' }, { created: 1_795_000_900 });
  const older = signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: JWKS, audience: 'aud-old' }, { created: 1_795_000_800 });
  const s = apply(rooted(), newer);
  t.match(s.endUser, { audience: 'aud-new', created: 1_795_000_900 });
  const after = apply(s, older);
  t.equal(after.endUser!.audience, 'aud-new', 'an older config changes nothing');
  t.equal(after.applied.length, 3, 'but the entry counts as applied');
  const newest = apply(after, signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: JWKS, audience: 'aud-newest' }, { created: 1_795_001_000 }));
  t.equal(newest.endUser!.audience, 'aud-newest');
  t.throws(() => apply(rooted(), signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ ...JWKS.keys[0], d: 'secret' }] }, audience: 'a' })), /private key material/);
  t.throws(() => apply(rooted(), signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }, audience: 'a' })), /EC, OKP or RSA/);
  t.throws(() => apply(rooted(), signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: JWKS })), /audience/);
});

t.test('a body that does not match its Content-Digest is refused', async (t) => {
  const tampered = signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey }, { tamperBody: new TextEncoder().encode(JSON.stringify({ public_key: bytesToHex(ed25519.getPublicKey(seed('evil'))) })) });
  t.throws(() => apply(rooted(), tampered), /Content-Digest does not match/);
});

t.test('a request this node does not apply is refused', async (t) => {
  t.throws(() => apply(rooted(), signedEntry(first, 'POST', '/v1/transactions', { intent: 'aa' })), /POST \/v1\/transactions is not a request this node applies/);
  t.throws(() => apply(rooted(), signedEntry(first, 'DELETE', `/v1/api-keys/${first.keyId}`)), /not a request this node applies/);
  t.throws(() => apply(rooted(), signedEntry(first, 'GET', '/v1/api-keys')), /not a request this node applies/);
  t.throws(() => apply(rooted(), signedEntry(first, 'POST', '/v1/api-keys', { public_key: 'zz' })), /public_key/);
  t.ok(apply(rooted(), signedEntry(first, 'POST', '/custody/v1/api-keys', { public_key: second.publicKey }, { origin: 'https://gw.example' })).keys[second.keyId], 'under a base path');
});

t.test('a log applies all or nothing, and the input state is never changed', async (t) => {
  const s = rooted();
  const bad = signedEntry(signer(ORG, seed('stranger')), 'POST', '/v1/api-keys', { public_key: second.publicKey });
  t.throws(() => apply(s, addSecond, bad), /entry 1:/);
  t.notOk(s.keys[second.keyId], 'unchanged');
  t.equal(s.applied.length, 1);
  t.throws(() => applyTrustLog(s, [new Uint8Array([1, 2, 3])], ctx), TrustEntryError, 'garbage');
});

t.test('keys from the bootstrap file sign entries and can be revoked', async (t) => {
  const file = { key_1: first.publicKey };
  const legacy = signer(ORG, seed('first api key'), 'key_1');
  const fileCtx = { ...ctx, fileKeys: file };
  const s = applyTrustLog(emptyTrust(ORG), [signedEntry(legacy, 'POST', '/v1/api-keys', { public_key: second.publicKey })], fileCtx).state;
  t.ok(activeKey(s, file, second.keyId));
  t.ok(activeKey(s, file, 'key_1'));
  const r = applyTrustLog(s, [signedEntry(second, 'POST', '/v1/api-keys/key_1/revoke')], fileCtx).state;
  t.notOk(activeKey(r, file, 'key_1'), 'the stored revocation overrides the file');
  t.equal(r.keys['key_1']!.publicKey, first.publicKey);
});

t.test('a creation request: POST /v1/vaults signed by an active key, with its tier and subject', async (t) => {
  const s = apply(rooted(), addSecond);
  const req = signedEntry(second, 'POST', '/v1/vaults', { tier: 'hosted', name: 'ops', end_user_subject: 'user-42' });
  t.match(verifyCreationRequest(s, undefined, req), { tier: 'hosted', endUserSubject: 'user-42', keyId: second.keyId });
  t.match(verifyCreationRequest(s, undefined, signedEntry(first, 'POST', '/v1/vaults', { tier: 'self' })), { tier: 'self' });
  t.throws(() => verifyCreationRequest(s, undefined, signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey })), /not POST \/v1\/vaults/);
  t.throws(() => verifyCreationRequest(s, undefined, signedEntry(first, 'POST', '/v1/vaults', { tier: 'self', end_user_subject: 'u' })), /hosted vaults only/);
  t.throws(() => verifyCreationRequest(s, undefined, signedEntry(first, 'POST', '/v1/vaults', { tier: 'gold' })), /tier/);
  t.throws(() => verifyCreationRequest(s, undefined, bootstrap), /not a request entry/);
  const revoked = apply(s, signedEntry(first, 'POST', `/v1/api-keys/${second.keyId}/revoke`));
  t.throws(() => verifyCreationRequest(revoked, undefined, req), /unknown or revoked/, 'the signer was revoked since');
  // Creation requests in the log itself verify and change nothing.
  const withVault = applyTrustLog(s, [req], ctx);
  t.ok(withVault.changed);
  t.same(withVault.state.keys, s.keys);
});

t.test('node enrolment: a signed POST /v1/nodes enrols once; revocation is final; bad bodies refuse the log', async (t) => {
  const nodeSecret = seed('a customer node');
  const sk = bytesToHex(ed25519.getPublicKey(nodeSecret));
  const node = { node_id: nodeIdFor(ed25519.getPublicKey(nodeSecret)), signing_key: sk, encryption_key: bytesToHex(seed('x25519 public')) };
  const enrol = signedEntry(first, 'POST', '/v1/nodes', { kind: 'self', ...node, label: 'rack' });
  const s = apply(rooted(), enrol);
  t.same(enrolledNode(s, node.node_id), { kind: 'self', signingKey: sk, encryptionKey: node.encryption_key, revoked: false });
  // Enrolled again with another encryption key (a replay, or a second request): the first stays.
  const again = apply(s, signedEntry(first, 'POST', '/v1/nodes', { kind: 'self', ...node, encryption_key: bytesToHex(seed('other')) }));
  t.equal(enrolledNode(again, node.node_id)?.encryptionKey, node.encryption_key, 'a known id is not re-enrolled');
  const revoked = apply(again, signedEntry(first, 'POST', `/v1/nodes/${node.node_id}/revoke`));
  t.equal(enrolledNode(revoked, node.node_id)?.revoked, true);
  t.equal(enrolledNode(apply(revoked, signedEntry(first, 'POST', '/v1/nodes', { kind: 'self', ...node })), node.node_id)?.revoked, true, 'no enrolment revives it');
  const never = nodeIdFor(ed25519.getPublicKey(seed('never enrolled')));
  t.equal(enrolledNode(apply(rooted(), signedEntry(first, 'POST', `/v1/nodes/${never}/revoke`)), never)?.revoked, true, 'revoking an id this node never saw keeps it out for good');

  const bad: [string, unknown, RegExp][] = [
    ['an unknown kind', { kind: 'service', ...node }, /kind must be self or tee/],
    ['an id not derived from the key', { kind: 'self', ...node, node_id: never }, /not the id derived/],
    ['a signing key off the curve', { kind: 'self', ...node, signing_key: 'ff'.repeat(32) }, /not a valid Ed25519/],
    ['a short encryption key', { kind: 'self', ...node, encryption_key: 'ab' }, /32-byte hex keys/],
    ['an attestation on a self node', { kind: 'self', ...node, attestation: 'AAAA' }, /tee nodes only/],
    ['a tee node without attestation', { kind: 'tee', ...node }, /attestation document/],
    ['a tee node on a node that verifies no attestation', { kind: 'tee', ...node, attestation: 'AAAA' }, /verifies no TEE attestation/],
  ];
  for (const [name, body, message] of bad) {
    t.throws(() => apply(rooted(), signedEntry(first, 'POST', '/v1/nodes', body)), { code: 'bad_trust_log', message }, name);
  }
  t.throws(() => apply(rooted(), signedEntry(second, 'POST', '/v1/nodes', { kind: 'self', ...node })), /bad_trust_log|not active|unknown/, 'signed by a key the organization does not have');
  t.throws(() => apply(rooted(), signedEntry(first, 'POST', '/v1/nodes/not-a-node/revoke')), /node id in the path is not valid/);
});

t.test('TEE measurements move forward only, and are checked set by set', async (t) => {
  const pcr = (b: number) => bytesToHex(new Uint8Array(48).fill(b));
  const put = (version: number, allowed: unknown) => signedEntry(first, 'PUT', '/v1/tee/measurements', { version, allowed });
  const v2 = apply(rooted(), put(2, [{ 0: pcr(1), 1: pcr(2) }, { 0: pcr(3) }]));
  t.same(v2.teeMeasurements, { version: 2, allowed: [{ 0: pcr(1), 1: pcr(2) }, { 0: pcr(3) }] });
  t.same(apply(v2, put(1, [{ 0: pcr(9) }])).teeMeasurements?.version, 2, 'an older version changes nothing');
  t.same(apply(v2, put(2, [{ 0: pcr(9) }])).teeMeasurements?.allowed[0], { 0: pcr(1), 1: pcr(2) }, 'nor does the same version');
  t.ok(measurementsAllowed(v2, { 0: pcr(1), 1: pcr(2), 2: pcr(7) }), 'every PCR a set names matches');
  t.notOk(measurementsAllowed(v2, { 0: pcr(1), 1: pcr(5) }), 'one PCR of the set differs');
  t.ok(measurementsAllowed(v2, { 0: pcr(3) }), 'the second set');
  t.notOk(measurementsAllowed(rooted(), { 0: pcr(3) }), 'nothing pinned: nothing allowed');
  const bad: [string, unknown, unknown, RegExp][] = [
    ['version 0', 0, [{ 0: pcr(1) }], /version/],
    ['no sets', 1, [], /1 to 16/],
    ['a set without PCR0', 1, [{ 1: pcr(1) }], /PCR0/],
    ['PCR 7', 1, [{ 0: pcr(1), 7: pcr(1) }], /PCR7 is not one/],
    ['a short value', 1, [{ 0: 'ab' }], /48 bytes/],
    ['an all-zero PCR0', 1, [{ 0: pcr(0) }], /debug-mode/],
  ];
  for (const [name, version, allowed, message] of bad) t.throws(() => apply(rooted(), put(version as number, allowed)), { code: 'bad_trust_log', message }, name);
});
