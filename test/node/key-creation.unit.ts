// What a node checks before it joins a key generation (docs/trust.md "Key generation"): the carried
// log, the customer's signed creation request and its tier, the end-user binding fixed at creation,
// the older rule for organizations known only from the keys file, and one key per creation request.
import t, { type Test } from 'tap';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ed25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { signBootstrap } from '../../core/trust/trust-entry.ts';
import { SealedStore } from '../../node/storage/sealed-store.ts';
import { TrustRegistry } from '../../node/runtime/authorization/trust-registry.ts';
import { authorizeKeyCreation } from '../../node/runtime/authorization/key-creation.ts';
import { VaultShareStore } from '../../node/storage/vault-shares.ts';
import { SessionRefused } from '../../node/runtime/session-host.ts';
import { dkg } from '../../node/protocols/dkg/dkg.ts';
import { simulate } from '../protocols/simulate.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const seed = (s: string) => sha256(new TextEncoder().encode(s));
const ORG = 'org_create';
const LEGACY = 'org_legacy';
const operator = seed('creation operator');
const first = signer(ORG, seed('creation first'));
const legacy = signer(LEGACY, seed('legacy key'), 'key_1');
const log = [signBootstrap(ORG, first.publicKey, 1_795_000_000, operator)];
const JWKS = { keys: [{ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' }] };
const refusal = (code: string) => ({ constructor: SessionRefused, code });

async function setup(t: Test) {
  const store = await SealedStore.open(mkdtempSync(join(tmpdir(), 'create-')), new Uint8Array(32).fill(2));
  t.teardown(() => store.close());
  const trust = new TrustRegistry(store, { operatorKeys: [bytesToHex(ed25519.getPublicKey(operator))], fileKeys: { [LEGACY]: { key_1: legacy.publicKey } } });
  return { trust, vault: new VaultShareStore(store) };
}

t.test('an organization rooted by an operator creates keys only on its signed request, of the tier asked', async (t) => {
  const { trust } = await setup(t);
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', trustLog: log }), refusal('bad_creation_request'));
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'self' }), refusal('bad_creation_request'), 'any tier, once rooted');
  const hosted = signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted' });
  const grant = await authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', creationRequest: hosted });
  t.match(grant, { tier: 'hosted' });
  t.notOk(grant.endUser, 'no end-user config yet: no tokens');
  t.ok(grant.creationHash);
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'self', creationRequest: hosted }), refusal('bad_creation_request'), 'another tier than asked');
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'gold', creationRequest: hosted }), refusal('bad_params'));
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', creationRequest: new Uint8Array([1, 2, 3]) }), refusal('bad_creation_request'), 'a malformed entry');
  const stranger = signer(ORG, seed('stranger'));
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', creationRequest: signedEntry(stranger, 'POST', '/v1/vaults', { tier: 'hosted' }) }), refusal('bad_creation_request'), 'signed by no key of the organization');
  await t.rejects(authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', trustLog: [new Uint8Array([0])], creationRequest: hosted }), refusal('bad_trust_log'));
});

t.test('a hosted key created under an end-user config requires tokens; the request\'s subject is bound', async (t) => {
  const { trust } = await setup(t);
  const config = signedEntry(first, 'PUT', '/v1/config/end-user-auth', { jwks: JWKS, audience: 'aud' });
  const bound = await authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', trustLog: [...log, config], creationRequest: signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted', end_user_subject: 'user-7' }) });
  t.same(bound.endUser, { required: true, subject: 'user-7' });
  const open = await authorizeKeyCreation(trust, { owner: ORG, tier: 'hosted', creationRequest: signedEntry(first, 'POST', '/v1/vaults', { tier: 'hosted' }) });
  t.same(open.endUser, { required: true }, 'any end user of the organization');
  const self = await authorizeKeyCreation(trust, { owner: ORG, tier: 'self', creationRequest: signedEntry(first, 'POST', '/v1/vaults', { tier: 'self' }) });
  t.notOk(self.endUser, 'tokens gate hosted keys only');
});

t.test('organizations known only from the keys file, or not at all, keep the older rule', async (t) => {
  const { trust } = await setup(t);
  t.same(await authorizeKeyCreation(trust, { owner: LEGACY, tier: 'hosted' }), { tier: 'hosted' });
  t.same(await authorizeKeyCreation(trust, { owner: 'org_unknown', tier: 'self' }), { tier: 'self' });
  const withRequest = await authorizeKeyCreation(trust, { owner: LEGACY, tier: 'hosted', creationRequest: signedEntry(legacy, 'POST', '/v1/vaults', { tier: 'hosted', end_user_subject: 'u' }) });
  t.same(withRequest.endUser, { required: false, subject: 'u' }, 'a given request is still verified and its subject kept');
});

t.test('the share is stored with its tier and end-user binding, and the creation request bound to it in the same batch', async (t) => {
  const { vault } = await setup(t);
  const parties = [1, 2];
  const params = new Map(parties.map((me) => [me, { sessionId: 'ab'.repeat(32), keyId: 'vault-b', epoch: 0, threshold: 2, parties, me }]));
  const share = simulate(dkg, params, { seed: 'binding' }).results.get(1)!;
  const hash = 'cd'.repeat(32);
  t.equal(await vault.creationBinding(hash), undefined);
  await vault.putNew('vault-b', { key: share, owner: ORG, committee: [], tier: 'hosted', endUser: { required: true, subject: 'user-7' } }, hash);
  t.equal(await vault.creationBinding(hash), 'vault-b');
  t.match(await vault.current('vault-b'), { owner: ORG, tier: 'hosted', endUser: { required: true, subject: 'user-7' } });
});
