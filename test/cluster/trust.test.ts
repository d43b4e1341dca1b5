// Real node processes that know only an operator key (no API keys file) learn an organization's trust
// from the log carried with each request (docs/trust.md): an operator bootstrap roots it, a key
// registered by a signed request signs, its revocation is final even when a later log omits it, and a
// hosted vault created after the end-user auth config signs only with its end user's token for the
// exact intent (or with a member-action proof whose nonce commits to it), through a refresh, until it
// moves to the self tier.
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import * as bitcoin from 'bitcoinjs-lib';
import * as ecc from '@bitcoinerlab/secp256k1';
import { ed25519 } from '@noble/curves/ed25519.js';
import { schnorr } from '@noble/curves/secp256k1.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import { Cluster, freePort } from './cluster-harness.ts';
import { startCoordinator } from '../../coordinator/coordinator-server.ts';
import { loadCoordinatorConfig } from '../../coordinator/config.ts';
import { createLogger } from '../../common/logger.ts';
import { Scheme, Tier } from '../../proto/gen/mpc/v1/coordinator_pb.ts';
import { connectCoordinator } from '../../api/coordinator/coordinator-client.ts';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { encodeIntent, signIntent } from '../../core/intents/intent.ts';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { encodeBlob } from '../../core/codec/blob.ts';
import { derive } from '../../node/protocols/derive/bip32.ts';
import { outputKey } from '../../node/protocols/frost/taproot.ts';
import { pointHex } from '../../node/protocols/math/curve.ts';
import { signedEntry, signer, type Signer } from '../core/trust/trust-fixtures.ts';
import { memberActionBatchNonce, memberActionNonce, MEMBER_PROOF_MAX_AGE_S, type MemberActionBinding } from '../../core/auth/member-action.ts';
import { MEMBER_CREDENTIAL_TYP } from '../../core/auth/member-credential.ts';
import { softwarePasskey } from '../support/software-passkey.ts';

// Real processes on a 2-core machine shared with the rest of the suite: more than tap's default file budget.
t.setTimeout(300_000);

bitcoin.initEccLib(ecc);
type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
const ORG = 'org_trusted';
const PATH = [86, 1, 0, 0, 0];

t.test('nodes rooted by an operator key: registration, revocation that sticks, hosted end-user tokens', async (t) => {
  const cluster = new Cluster();
  const dir = mkdtempSync(join(tmpdir(), 'coord-'));
  const port = await freePort();
  const rosterFile = await cluster.roster(['node-1', 'node-2', 'node-3']);
  const coordinator = await startCoordinator(
    loadCoordinatorConfig({ COORDINATOR_LISTEN: `127.0.0.1:${port}`, COORDINATOR_DATA_DIR: dir, COORDINATOR_ROSTER_FILE: rosterFile, COORDINATOR_HEARTBEAT_MS: '1000', COORDINATOR_SIGN_TIMEOUT_MS: '6000' }),
    createLogger('coordinator', 'silent'),
  );
  cluster.useCoordinatorPort(port);
  // The API's client: a refusal arrives as a CustodyError with the refusing node's code, not as text.
  const client = connectCoordinator({ address: `127.0.0.1:${port}` });
  const refused = (code: string) => ({ constructor: CustodyError, code, kind: 'refused', culprits: [] });
  t.teardown(async () => {
    client.close();
    await cluster.stop();
    await coordinator.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  const operator = new Uint8Array(randomBytes(32));
  const env = { NODE_OPERATOR_KEYS: bytesToHex(ed25519.getPublicKey(operator)) };
  const nodes = await Promise.all(['node-1', 'node-2', 'node-3'].map((n) => cluster.startNode(n, env)));

  const first = signer(ORG, new Uint8Array(randomBytes(32)));
  const second = signer(ORG, new Uint8Array(randomBytes(32)));
  const trustLog = [signBootstrap(ORG, first.publicKey, Math.floor(Date.now() / 1000), operator), signedEntry(first, 'POST', '/v1/api-keys', { public_key: second.publicKey, label: 'backend' })];

  const createVault = (vaultId: string, creation: Uint8Array | undefined, log: Uint8Array[]) =>
    client.createVault({ vaultId, owner: ORG, tier: Tier.HOSTED, trustLog: log, ...(creation ? { creationRequest: creation } : {}) }, { deadline: Date.now() + 60_000 });

  /** A P2TR spend from the key's wallet, its intent signed by `by`. */
  const spend = (key: { publicKey: Uint8Array; chainCode: Uint8Array }, by: Signer) => {
    const q = outputKey(pointHex(derive(bytesToHex(key.publicKey), bytesToHex(key.chainCode), PATH).publicKey));
    const own = bitcoin.payments.p2tr({ pubkey: q, network: bitcoin.networks.regtest });
    const dest = bitcoin.payments.p2wpkh({ hash: new Uint8Array(20).fill(7), network: bitcoin.networks.regtest });
    const prev = new Uint8Array(randomBytes(32));
    const intent = encodeIntent({
      kind: 'btc.transfer', organization: ORG, walletId: 'wal', network: 'regtest', from: own.address!, outputs: [{ address: dest.address!, amount: 60_000n }],
      maxFeeRate: 20n, maxFee: 5_000n, inputs: [{ txid: prev.slice().reverse(), vout: 0 }], idempotencyKey: 'btc-' + bytesToHex(randomBytes(4)), notAfter: BigInt(Math.floor(Date.now() / 1000) + 3600),
    });
    const tx = new bitcoin.Transaction();
    tx.version = 2;
    tx.addInput(prev, 0);
    tx.addOutput(dest.output!, 60_000n);
    tx.addOutput(own.output!, 39_000n);
    const digest = tx.hashForWitnessV1(0, [own.output!], [100_000n], bitcoin.Transaction.SIGHASH_DEFAULT);
    const template = encodeBlob('btc-template', { tx: tx.toHex(), prevouts: [{ script: bytesToHex(own.output!), value: '100000' }] });
    return { intent, intentSignature: signIntent(intent, by.secret), apiKeyId: by.keyId, template, digest, q };
  };
  const sign = (vaultId: string, s: ReturnType<typeof spend>, log: Uint8Array[], endUserToken = '', memberAction?: MemberActionBinding) =>
    client.sign({
      vaultId, path: PATH, scheme: Scheme.SCHNORR_TAPROOT, digests: [s.digest],
      authorization: { intent: s.intent, intentSignature: s.intentSignature, apiKeyId: s.apiKeyId, template: s.template, endUserToken, trustLog: log, ...(memberAction ? { memberAction } : {}) },
    }, { deadline: Date.now() + 30_000 });

  // A hosted key needs the customer's signed creation request once the organization is rooted.
  await t.rejects(createVault('vault-forged', undefined, trustLog), refused('bad_creation_request'));
  const plain = (await createVault('vault-plain', signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted', name: 'ops' }), trustLog)).vault!;
  t.equal(plain.state, 'active');

  // A node that is not on the operator's roster, seated by the coordinator beside two honest ones:
  // every node refuses, and the vault gets no key.
  const outsider = await cluster.startNode('node-x', env);
  await t.rejects(
    client.createVault({ vaultId: 'vault-outsider', owner: ORG, tier: Tier.HOSTED, nodeIds: [nodes[0]!.nodeId, nodes[1]!.nodeId, outsider.nodeId], threshold: 2, trustLog, creationRequest: signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted' }) }, { deadline: Date.now() + 60_000 }),
    refused('unverified_committee'),
  );
  await outsider.proc.kill();

  // The key the API registered signs.
  const s1 = spend(plain, second);
  const signed = await sign('vault-plain', s1, trustLog);
  t.ok(schnorr.verify(signed.signatures[0]!, s1.digest, s1.q), 'a key registered through the log signs');

  // Revoked: refused at once, and still refused when a later log omits the revocation.
  const withRevoke = [...trustLog, signedEntry(first, 'POST', `/v1/api-keys/${second.keyId}/revoke`)];
  await t.rejects(sign('vault-plain', spend(plain, second), withRevoke), refused('unknown_api_key'));
  await t.rejects(sign('vault-plain', spend(plain, second), trustLog), refused('unknown_api_key'), 'the nodes remember the revocation');
  // A log forged by whoever relays it refuses the session.
  const forged = signBootstrap(ORG, second.publicKey, 1, new Uint8Array(randomBytes(32)));
  await t.rejects(sign('vault-plain', spend(plain, first), [...withRevoke, forged]), refused('bad_trust_log'));

  // End-user auth, then a hosted vault bound to user-42.
  const idp = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256' };
  const fullLog = [...withRevoke, signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: { keys: [jwk] }, audience: 'custody-test' })];
  const hosted = (await createVault('vault-hosted', signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted', end_user_subject: 'user-42' }), fullLog)).vault!;
  const sent: string[] = [];
  const tokenFor = async (intent: Uint8Array, sub = 'user-42') => {
    const jwt = await new SignJWT({ intent_sha256: bytesToHex(sha256(intent)) }).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).setSubject(sub)
      .setAudience('custody-test').setIssuedAt().setExpirationTime('5m').sign(idp.privateKey);
    sent.push(jwt);
    return jwt;
  };

  const h = spend(hosted, first);
  await t.rejects(sign('vault-hosted', h, fullLog), refused('end_user_token_required'));
  await t.rejects(sign('vault-hosted', h, fullLog, await tokenFor(h.intent, 'user-99')), refused('wrong_end_user'));
  await t.rejects(sign('vault-hosted', h, fullLog, await tokenFor(spend(hosted, first).intent)), refused('token_intent_mismatch'));
  const ok = await sign('vault-hosted', h, fullLog, await tokenFor(h.intent));
  t.ok(schnorr.verify(ok.signatures[0]!, h.digest, h.q), 'with the end user\'s token for this intent it signs');

  // Member-action proofs (docs/platform/member-actions.md): the end user's fresh ID token, whose nonce
  // commits to an action binding (id, salt) and the intent. The caller here plays a malicious API: it
  // can pick the binding, the intent and the token it relays, but each node recomputes the nonce itself
  // and checks the token under the registration it holds.
  const binding = (): MemberActionBinding => ({ actionId: `mac_${randomBytes(32).toString('base64url')}`, salt: new Uint8Array(randomBytes(32)) });
  const memberProof = async (intent: Uint8Array, b: MemberActionBinding, claims: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const payload: Record<string, unknown> = { iss: 'https://id.example', sub: 'user-42', aud: 'custody-test', iat: now - 5, auth_time: now - 10, exp: now + 3600, nonce: memberActionNonce(b.actionId, b.salt, bytesToHex(sha256(intent))), ...claims };
    for (const k of Object.keys(payload)) if (payload[k] === undefined) delete payload[k];
    const jwt = await new SignJWT(payload).setProtectedHeader({ alg: 'ES256', kid: 'idp-1' }).sign(idp.privateKey);
    sent.push(jwt);
    return jwt;
  };
  const m = spend(hosted, first);
  const mb = binding();
  const stale = Math.floor(Date.now() / 1000) - MEMBER_PROOF_MAX_AGE_S - 60;
  const adversarial: [string, Promise<string>, MemberActionBinding, string][] = [
    ['the proof of another intent', memberProof(spend(hosted, first).intent, mb), mb, 'member_action_mismatch'],
    ['a changed salt', memberProof(m.intent, mb), { ...mb, salt: new Uint8Array(randomBytes(32)) }, 'member_action_mismatch'],
    ['a changed action id', memberProof(m.intent, mb), { ...mb, actionId: binding().actionId }, 'member_action_mismatch'],
    ['a stale auth_time', memberProof(m.intent, mb, { auth_time: stale }), mb, 'member_proof_stale'],
    ['another subject for the bound vault', memberProof(m.intent, mb, { sub: 'user-99' }), mb, 'wrong_end_user'],
    ['a token with no nonce', memberProof(m.intent, mb, { nonce: undefined }), mb, 'bad_end_user_token'],
    ['an intent_sha256 token paired with a binding', tokenFor(m.intent), mb, 'bad_end_user_token'],
  ];
  for (const [what, token, b, code] of adversarial) await t.rejects(sign('vault-hosted', m, fullLog, await token, b), refused(code), `member action: ${what}`);
  const signedForMember = await sign('vault-hosted', m, fullLog, await memberProof(m.intent, mb), mb);
  t.ok(schnorr.verify(signedForMember.signatures[0]!, m.digest, m.q), 'with the member\'s fresh proof for this action and intent the nodes sign, after every refusal');

  // Passkey proofs (member-actions.md "Passkey proofs"): the member credential, a JWT under the same
  // registered key, names the passkey; the assertion's challenge is the action's nonce. The malicious
  // API here holds a passkey of its own and can sign credentials with a key of its own, not with the
  // organization's.
  const site = { rpId: 'bank.example', origin: 'https://app.bank.example' };
  const memberPasskey = softwarePasskey(site);
  const apiPasskey = softwarePasskey(site);
  const credentialFor = async (pk: ReturnType<typeof softwarePasskey>, key: PrivateKey = idp.privateKey) => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({ sub: 'user-42', aud: 'custody-test', iat: now - 60, exp: now + 86_400, cnf: { jwk: pk.jwk }, webauthn: { rp_id: site.rpId, origins: [site.origin] } })
      .setProtectedHeader({ alg: 'ES256', kid: 'idp-1', typ: MEMBER_CREDENTIAL_TYP }).sign(key);
    sent.push(jwt);
    return jwt;
  };
  const pkSpend = spend(hosted, first);
  const pb = binding();
  const pbNonce = memberActionNonce(pb.actionId, pb.salt, bytesToHex(sha256(pkSpend.intent)));
  const memberCredential = await credentialFor(memberPasskey);
  const passkeyCases: [string, Promise<string>, MemberActionBinding, string][] = [
    ['a passkey assertion for another intent', Promise.resolve(memberCredential), { ...pb, passkey: memberPasskey.assert(memberActionNonce(pb.actionId, pb.salt, bytesToHex(sha256(spend(hosted, first).intent)))) }, 'member_action_mismatch'],
    ['the API\'s passkey under the member\'s credential', Promise.resolve(memberCredential), { ...pb, passkey: { ...apiPasskey.assert(pbNonce), credentialId: memberPasskey.id } }, 'bad_end_user_token'],
    ['the API\'s passkey under a credential the API signed', credentialFor(apiPasskey, (await generateKeyPair('ES256')).privateKey), { ...pb, passkey: apiPasskey.assert(pbNonce) }, 'bad_end_user_token'],
    ['an assertion without user verification', Promise.resolve(memberCredential), { ...pb, passkey: memberPasskey.assert(pbNonce, { flags: 0x01 }) }, 'bad_end_user_token'],
  ];
  for (const [what, token, b, code] of passkeyCases) await t.rejects(sign('vault-hosted', pkSpend, fullLog, await token, b), refused(code), `member action: ${what}`);
  const signedByPasskey = await sign('vault-hosted', pkSpend, fullLog, memberCredential, { ...pb, passkey: memberPasskey.assert(pbNonce) });
  t.ok(schnorr.verify(signedByPasskey.signatures[0]!, pkSpend.digest, pkSpend.q), 'with the member\'s passkey assertion for this action and intent the nodes sign, after every refusal');
  // Batch actions (member-actions.md "Batch actions"): one proof whose nonce commits to an ordered list
  // of intent digests, which the API forwards beside the binding. The malicious API swaps an entry for an
  // intent of its own, or sends the proof for an intent outside the list; the nodes sign only the intents
  // the member approved, each one as its own request.
  const [ba, bb, bc] = [spend(hosted, first), spend(hosted, first), spend(hosted, first)];
  const bBinding = { ...binding(), batch: [sha256(ba.intent), sha256(bb.intent)] };
  const batchProof = await memberProof(ba.intent, bBinding, { nonce: memberActionBatchNonce(bBinding.actionId, bBinding.salt, bBinding.batch.map((d) => bytesToHex(d))) });
  await t.rejects(sign('vault-hosted', bc, fullLog, batchProof, bBinding), refused('member_action_mismatch'), 'member batch: an intent outside the list');
  await t.rejects(sign('vault-hosted', bc, fullLog, batchProof, { ...bBinding, batch: [sha256(ba.intent), sha256(bc.intent)] }), refused('member_action_mismatch'), 'member batch: an entry swapped for the API\'s intent');
  await t.rejects(sign('vault-hosted', ba, fullLog, batchProof, { actionId: bBinding.actionId, salt: bBinding.salt }), refused('member_action_mismatch'), 'member batch: the list stripped');
  for (const [what, sp] of [['first', ba], ['second', bb]] as const) {
    const out = await sign('vault-hosted', sp, fullLog, batchProof, bBinding);
    t.ok(schnorr.verify(out.signatures[0]!, sp.digest, sp.q), `member batch: the ${what} intent of the list signs with the one proof`);
  }
  // The vault created before the config keeps signing without tokens.
  const s2 = spend(plain, first);
  t.ok(schnorr.verify((await sign('vault-plain', s2, fullLog)).signatures[0]!, s2.digest, s2.q));

  // A refresh keeps the key hosted: the binding holds in the new epoch. A move to the self tier drops it.
  // As the API's reshare job does: a committee member that missed heartbeats on a loaded machine is
  // `unavailable` (node_not_attached) until it redials; try again then.
  for (let attempt = 1; ; attempt++) {
    try {
      await client.reshare({ vaultId: 'vault-hosted' }, { deadline: Date.now() + 60_000 });
      break;
    } catch (err) {
      if (!(err instanceof CustodyError && err.kind === 'unavailable') || attempt === 5) throw err;
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
  const r1 = spend(hosted, first);
  await t.rejects(sign('vault-hosted', r1, fullLog), refused('end_user_token_required'), 'after a refresh');
  t.ok(schnorr.verify((await sign('vault-hosted', r1, fullLog, await tokenFor(r1.intent))).signatures[0]!, r1.digest, r1.q));
  // The move seats the enrolled customer node its signed reshare request names, and no other.
  const selfId = await cluster.identity('self-1');
  const self = await cluster.startNode('self-1', { ...env, NODE_KIND: 'self', NODE_OWNER: ORG });
  // Not enrolled: the coordinator naming the node (as the API would) does not make any node seat it.
  await t.rejects(client.reshare({ vaultId: 'vault-hosted', targetTier: Tier.SELF, trustLog: fullLog, customerNodeId: self.nodeId }, { deadline: Date.now() + 60_000 }), refused('reshare_request_required'), 'a node that claims the organization but is not enrolled, without the customer\'s request');
  const enrolledLog = [...fullLog, signedEntry(first, 'POST', '/v1/nodes', { kind: 'self', ...selfId })];
  const reshareTo = (customerNode: typeof selfId) => client.reshare({
    vaultId: 'vault-hosted', targetTier: Tier.SELF, trustLog: enrolledLog,
    // The move binds the vault's rotation (1, after the refresh), the target tier and the committee.
    reshareRequest: signedEntry(first, 'POST', '/v1/vaults/vault-hosted/reshare', { target_tier: 'self', rotation: 1, committee: [nodes[0]!.nodeId, customerNode.node_id], customer_node: customerNode }),
  }, { deadline: Date.now() + 60_000 });
  const stranger = await cluster.identity('not-started');
  await t.rejects(reshareTo(stranger), { constructor: CustodyError, code: 'node_not_attached', message: /not attached/ }, 'the coordinator does not seat another node instead');
  await t.rejects(client.reshare({ vaultId: 'vault-hosted', targetTier: Tier.SELF }, { deadline: Date.now() + 60_000 }), { constructor: CustodyError, code: 'no_customer_node' }, 'without a named enrolled node the coordinator seats none');
  const moved = (await reshareTo(selfId)).vault!;
  t.ok(moved.committee.some((m) => m.nodeId === self.nodeId));
  const r2 = spend(hosted, first);
  t.ok(schnorr.verify((await sign('vault-hosted', r2, enrolledLog)).signatures[0]!, r2.digest, r2.q), 'the self tier signs without end-user tokens');
  // Revoking the enrolment stops the node: the service nodes sign nothing more with it.
  const revokedLog = [...enrolledLog, signedEntry(first, 'POST', `/v1/nodes/${self.nodeId}/revoke`)];
  await t.rejects(sign('vault-hosted', spend(hosted, first), revokedLog), refused('node_revoked'), 'a revoked self node signs nothing');
  await t.rejects(sign('vault-hosted', spend(hosted, first), enrolledLog), refused('node_revoked'), 'also when a later log omits the revocation');

  // No node logged a token, or any part of one.
  const parts = sent.flatMap((jwt) => jwt.split('.').slice(1));
  for (const n of nodes) t.notOk(n.proc.raw.some((l) => l.includes('eyJ') || parts.some((p) => l.includes(p))), `${n.nodeId.slice(0, 8)} logged no token`);
});
