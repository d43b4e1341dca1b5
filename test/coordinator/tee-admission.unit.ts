// The coordinator's look at a TEE member before it seats it (coordinator/vaults/tee-admission.ts): the
// same verdicts the signer nodes reach on the same trust log, so a session they would all refuse never
// opens. Real dev-authority documents and signed log entries.
import t from 'tap';
import { ed25519, x25519 } from '@noble/curves/ed25519.js';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex } from '@noble/hashes/utils.js';
import { admitTeeMember } from '../../coordinator/vaults/tee-admission.ts';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { nitroTeeVerifier } from '../../tee/attestation/enrolment-verifier.ts';
import { teeNodeBinding } from '../../core/trust/tee-binding.ts';
import { nodeIdFor } from '../../core/trust/node-id.ts';
import { signedEntry, signer } from '../core/trust/trust-fixtures.ts';

const ORG = 'org_tee_admission';
const first = signer(ORG, sha256(new TextEncoder().encode('tee admission key')));
const authority = createDevAttestationAuthority();
const verify = nitroTeeVerifier({ rootsPem: authority.rootPem, allowDevRoot: true });
const IMAGE = { 0: new Uint8Array(48).fill(0x0a), 1: new Uint8Array(48).fill(1), 2: new Uint8Array(48).fill(2) };
const AT = 1_795_000_100;

const signingKey = ed25519.getPublicKey(ed25519.utils.randomSecretKey());
const encryptionKey = x25519.getPublicKey(x25519.utils.randomSecretKey());
const nodeId = nodeIdFor(signingKey);
const node = { node_id: nodeId, signing_key: bytesToHex(signingKey), encryption_key: bytesToHex(encryptionKey) };
const attestation = (userData = teeNodeBinding(ORG, nodeId, node.signing_key, node.encryption_key)) =>
  Buffer.from(authority.attest({ at: new Date(AT * 1000), pcrs: IMAGE, userData })).toString('base64');
const enrol = (body: Record<string, unknown> = {}) => signedEntry(first, 'POST', '/v1/nodes', { kind: 'tee', ...node, attestation: attestation(), ...body }, { created: AT + 60 });
const pin = (version: number, pcr0: Uint8Array) => signedEntry(first, 'PUT', '/v1/tee/measurements', { version, allowed: [{ 0: bytesToHex(pcr0) }] });
const admit = (trustLog: Uint8Array[], keys = { signingKey, encryptionKey }) => () => admitTeeMember({ org: ORG, nodeId, ...keys, trustLog, verify });

t.test('an enrolled TEE node with an attested, pinned image is admitted', async (t) => {
  t.doesNotThrow(admit([enrol(), pin(1, IMAGE[0])]));
  t.doesNotThrow(admit([enrol(), pin(1, new Uint8Array(48).fill(9)), pin(2, IMAGE[0])]), 'the highest version counts');
});

t.test('what every node would refuse is refused here, by name', async (t) => {
  const other = new Uint8Array(48).fill(0x0b);
  t.throws(admit([pin(1, IMAGE[0])]), { code: 'unverified_committee', message: /not enrolled/ }, 'not enrolled');
  t.throws(admit([enrol(), pin(1, IMAGE[0]), signedEntry(first, 'POST', `/v1/nodes/${nodeId}/revoke`)]), { code: 'node_revoked' }, 'revoked');
  t.throws(admit([enrol({ kind: 'self' }), pin(1, IMAGE[0])]), { code: 'bad_committee' }, 'enrolled as self');
  t.throws(admit([enrol(), pin(1, IMAGE[0])], { signingKey, encryptionKey: x25519.getPublicKey(x25519.utils.randomSecretKey()) }), { code: 'unverified_committee', message: /other keys/ }, 'attached with other keys');
  t.throws(admit([enrol({ attestation: attestation(new Uint8Array(32)) }), pin(1, IMAGE[0])]), { code: 'bad_attestation', message: /user_data/ }, 'an attestation of other keys');
  t.doesNotThrow(admit([enrol(), pin(2, IMAGE[0]), pin(1, other)]), 'a lower version does not replace the pin');
  t.throws(admit([enrol(), pin(1, IMAGE[0]), pin(2, other)]), { code: 'unpinned_measurements', message: /version 2/ }, 'an upgrade that drops the image');
  t.throws(admit([enrol()]), { code: 'unpinned_measurements', message: /version none/ }, 'nothing pinned');
  const prodVerify = nitroTeeVerifier({ rootsPem: authority.rootPem, allowDevRoot: false });
  t.throws(() => admitTeeMember({ org: ORG, nodeId, signingKey, encryptionKey, trustLog: [enrol(), pin(1, IMAGE[0])], verify: prodVerify }), { code: 'bad_attestation', message: /development root/ }, 'a dev document where the dev root is not allowed');
});
