// The storage key sealed to the enclave build with AWS KMS (tee/seal/kms-sealer.ts), against the KMS
// double (test/tee/kms-double.ts) with documents from the DEV-ONLY attestation authority: a key round-trips
// for an enclave whose PCR0 the key policy allows, and is refused to one it does not name, to a debug
// enclave, to requests with wrong credentials, and when the CMS answer was changed on the way.
import t, { type Test } from 'tap';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { createServer } from 'node:http';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDevAttestationAuthority } from '../../tee/attestation/dev-provider.ts';
import { KmsSealer, STORAGE_KEY_ENCRYPTION_CONTEXT, type AttestPublicKey } from '../../tee/seal/kms-sealer.ts';
import { KmsClient, type KmsError } from '../../tee/seal/kms-client.ts';
import { SealError } from '../../tee/seal/seal-error.ts';
import { InsecureDevSealer } from '../../tee/seal/dev-sealer.ts';
import { signHeaders, sigv4Signer, type AwsCredentials } from '../../common/aws-sigv4.ts';
import { startKmsDouble, type KmsDouble, type KmsDoubleOptions } from './kms-double.ts';

const authority = createDevAttestationAuthority();
const pcr = (fill: number) => new Uint8Array(48).fill(fill);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const PCR0 = pcr(0xa0);
const OTHER_PCR0 = pcr(0xb0);
const CREDENTIALS: AwsCredentials = { accessKeyId: 'AKIAIOSFODNN7EXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY' };

/** What the NSM would do inside an enclave measured with these PCRs. */
const enclave = (pcrs: Record<number, Uint8Array>): AttestPublicKey => async (publicKey) => authority.attest({ at: new Date(), pcrs, publicKey });
const allowedEnclave = enclave({ 0: PCR0, 1: pcr(0xa1), 2: pcr(0xa2) });

async function kms(t: Test, options: Partial<KmsDoubleOptions> = {}): Promise<KmsDouble> {
  const d = await startKmsDouble({
    credentials: CREDENTIALS, attestationRoots: [authority.rootPem],
    policy: { recipientAttestation: { ImageSha384: [hex(PCR0)] }, encryptionContext: STORAGE_KEY_ENCRYPTION_CONTEXT }, ...options,
  });
  t.teardown(() => d.close());
  return d;
}

const sealerFor = (d: KmsDouble, attest: AttestPublicKey = allowedEnclave, credentials: AwsCredentials = CREDENTIALS, keyId: string = d.keyId) =>
  new KmsSealer({ kms: { region: d.region, endpoint: d.endpoint, credentials }, keyId, attest });

async function refusal(t: Test, p: Promise<unknown>, code: string, awsType?: string): Promise<SealError> {
  try {
    await p;
  } catch (err) {
    t.type(err, SealError);
    t.equal((err as SealError).code, code, `code ${code}`);
    if (awsType) t.equal((err as KmsError).awsType, awsType, `KMS said ${awsType}`);
    return err as SealError;
  }
  t.fail('not refused');
  throw new Error('not refused');
}

t.test('a key generated for an allowed enclave unseals to the same key, each request with its own RSA key', async (t) => {
  const d = await kms(t);
  const sealer = sealerFor(d);
  const { key, sealed } = await sealer.generate();
  t.equal(key.length, 32);
  t.equal(sealed[0], 1, 'version 1');
  t.equal(sealed[1], 1, 'sealed by kms');
  t.notOk(Buffer.from(sealed).includes(Buffer.from(key)), 'the blob does not hold the key in the clear');
  t.same(await sealer.unseal(sealed), key, 'unsealed');
  t.same(await sealerFor(d).unseal(sealed), key, 'by another sealer of the same enclave build too (a restart)');
  t.same(await sealerFor(d, allowedEnclave, CREDENTIALS, d.keyArn).unseal(sealed), key, 'naming the KMS key by its ARN');
  t.same(d.calls.map((c) => [c.target, c.status]), [['TrentService.GenerateDataKey', 200], ['TrentService.Decrypt', 200], ['TrentService.Decrypt', 200], ['TrentService.Decrypt', 200]]);
  const keys = d.calls.map((c) => c.recipientKey);
  t.equal(new Set(keys).size, 4, 'a fresh RSA key per request');
  for (const k of keys) t.equal(createPublicKey({ key: Buffer.from(k!, 'hex'), format: 'der', type: 'spki' }).asymmetricKeyDetails?.modulusLength, 2048, 'RSA-2048');
});

t.test('a DER answer reads the same as the streamed BER one', async (t) => {
  const d = await kms(t, { cmsEncoding: 'der' });
  const { key, sealed } = await sealerFor(d).generate();
  t.same(await sealerFor(d).unseal(sealed), key);
});

t.test('temporary credentials carry their session token', async (t) => {
  const withToken = { ...CREDENTIALS, sessionToken: 'IQoJb3JpZ2luX2VjEXAMPLETOKEN' };
  const d = await kms(t, { credentials: withToken });
  const { key, sealed } = await sealerFor(d, allowedEnclave, withToken).generate();
  t.same(await sealerFor(d, allowedEnclave, withToken).unseal(sealed), key);
  await refusal(t, sealerFor(d, allowedEnclave, CREDENTIALS).unseal(sealed), 'unauthorized', 'UnrecognizedClientException');
});

t.test('an enclave whose PCR0 the key policy does not name gets nothing', async (t) => {
  const d = await kms(t);
  const { sealed } = await sealerFor(d).generate();
  const other = enclave({ 0: OTHER_PCR0, 1: pcr(0xa1), 2: pcr(0xa2) });
  await refusal(t, sealerFor(d, other).unseal(sealed), 'forbidden', 'AccessDeniedException');
  await refusal(t, sealerFor(d, other).generate(), 'forbidden', 'AccessDeniedException');
});

t.test('other conditions of the policy hold too: a PCR the policy names, the encryption context', async (t) => {
  const d = await kms(t, { policy: { recipientAttestation: { ImageSha384: [hex(PCR0)], PCR8: [hex(pcr(0xa8))] } } });
  await refusal(t, sealerFor(d).generate(), 'forbidden', 'AccessDeniedException');
  const signed = enclave({ 0: PCR0, 1: pcr(0xa1), 2: pcr(0xa2), 8: pcr(0xa8) });
  const { key, sealed } = await sealerFor(d, signed).generate();
  t.same(await sealerFor(d, signed).unseal(sealed), key);

  const strict = await kms(t);
  const wrongContext = new KmsSealer({ kms: { region: strict.region, endpoint: strict.endpoint, credentials: CREDENTIALS }, keyId: strict.keyId, attest: allowedEnclave, encryptionContext: { purpose: 'something else' } });
  await refusal(t, wrongContext.generate(), 'forbidden', 'AccessDeniedException');
});

t.test('a debug enclave is refused, whatever the policy', async (t) => {
  const d = await kms(t, { policy: { recipientAttestation: {} } });
  const { sealed } = await sealerFor(d).generate();
  const debug = enclave({});
  await refusal(t, sealerFor(d, debug).unseal(sealed), 'forbidden', 'AccessDeniedException');
  t.match(d.calls.at(-1), { status: 400, errorType: 'AccessDeniedException' });
});

t.test('a document under another root, or for another key, does not open the answer', async (t) => {
  const d = await kms(t);
  const { key, sealed } = await sealerFor(d).generate();
  const stranger = createDevAttestationAuthority();
  await refusal(t, sealerFor(d, async (publicKey) => stranger.attest({ at: new Date(), pcrs: { 0: PCR0, 1: pcr(1), 2: pcr(2) }, publicKey })).unseal(sealed), 'forbidden', 'AccessDeniedException');
  // A document for someone else's RSA key: KMS answers that key, which this sealer cannot open.
  const theirs = generateKeyPairSync('rsa', { modulusLength: 2048 }).publicKey.export({ type: 'spki', format: 'der' });
  await refusal(t, sealerFor(d, async () => authority.attest({ at: new Date(), pcrs: { 0: PCR0, 1: pcr(1), 2: pcr(2) }, publicKey: new Uint8Array(theirs) })).unseal(sealed), 'unseal_failed');
  t.same(await sealerFor(d).unseal(sealed), key, 'still opens for the enclave itself');
});

t.test('wrong credentials are refused by the signature check', async (t) => {
  const d = await kms(t);
  const { sealed } = await sealerFor(d).generate();
  await refusal(t, sealerFor(d, allowedEnclave, { ...CREDENTIALS, secretAccessKey: 'not-the-secret-key-of-this-access-key-id' }).unseal(sealed), 'unauthorized', 'InvalidSignatureException');
  await refusal(t, sealerFor(d, allowedEnclave, { ...CREDENTIALS, accessKeyId: 'AKIAI44QH8DHBEXAMPLE' }).unseal(sealed), 'unauthorized', 'UnrecognizedClientException');
  const skewed = new KmsSealer({ kms: { region: d.region, endpoint: d.endpoint, credentials: CREDENTIALS, clock: () => Date.now() - 20 * 60_000 }, keyId: d.keyId, attest: allowedEnclave });
  await refusal(t, skewed.unseal(sealed), 'unauthorized', 'InvalidSignatureException');
  const elsewhere = new KmsSealer({ kms: { region: 'us-east-1', endpoint: d.endpoint, credentials: CREDENTIALS }, keyId: d.keyId, attest: allowedEnclave });
  await refusal(t, elsewhere.unseal(sealed), 'unauthorized', 'InvalidSignatureException');
});

t.test('the host, holding the credentials but no enclave, gets no plaintext', async (t) => {
  const d = await kms(t);
  const { sealed } = await sealerFor(d).generate();
  const url = new URL('/', d.endpoint);
  const call = async (target: string, body: unknown) => {
    const text = JSON.stringify(body);
    const headers = await signHeaders(sigv4Signer('kms', d.region, CREDENTIALS), {
      method: 'POST', url, body: text, signingDate: new Date(), headers: { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': target },
    });
    const res = await fetch(url, { method: 'POST', headers, body: text });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const decrypt = await call('TrentService.Decrypt', { KeyId: d.keyId, CiphertextBlob: Buffer.from(sealed.subarray(18)).toString('base64'), EncryptionContext: STORAGE_KEY_ENCRYPTION_CONTEXT });
  t.equal(decrypt.status, 400);
  t.equal(decrypt.body.__type, 'AccessDeniedException', 'Decrypt without a recipient is refused');
  t.notOk('Plaintext' in decrypt.body);
  const generate = await call('TrentService.GenerateDataKey', { KeyId: d.keyId, KeySpec: 'AES_256', EncryptionContext: STORAGE_KEY_ENCRYPTION_CONTEXT });
  t.equal(generate.body.__type, 'AccessDeniedException', 'so is GenerateDataKey: the host cannot make a blob whose key it knows');
});

t.test('a changed CMS answer is refused', async (t) => {
  const d = await kms(t, { cmsEncoding: 'der' });
  const sealer = sealerFor(d);
  const { key, sealed } = await sealer.generate();
  const flip = (at: (cms: Uint8Array) => number) => (cms: Uint8Array) => {
    const out = new Uint8Array(cms);
    out[at(out)]! ^= 0x01;
    return out;
  };
  const cases: [string, (cms: Uint8Array) => Uint8Array][] = [
    // The DER layout: the wrapped key is the 256-byte OCTET STRING, the content the last bytes.
    ['the wrapped content-encryption key', flip((c) => Buffer.from(c).indexOf(Buffer.from([0x04, 0x82, 0x01, 0x00])) + 10)],
    ['the last block of the encrypted content', flip((c) => c.length - 1)],
    ['the first block of the encrypted content (CBC: read as another key)', flip((c) => c.length - 48)],
    ['the IV (CBC: read as another key)', flip((c) => Buffer.from(c).indexOf(Buffer.from([0x04, 0x10])) + 2)],
    ['the structure', (c) => c.subarray(0, c.length - 5)],
    ['the content-encryption algorithm', flip((c) => Buffer.from(c).indexOf(Buffer.from('60864801650304012a', 'hex')) + 8)],
  ];
  for (const [what, tamper] of cases) {
    d.tamperNextRecipientCiphertext = tamper;
    await refusal(t, sealer.unseal(sealed), 'unseal_failed').then((e) => t.pass(`${what}: ${e.message}`));
  }
  t.same(await sealer.unseal(sealed), key, 'an unchanged answer still opens');
});

t.test('a changed or foreign blob is refused', async (t) => {
  const d = await kms(t);
  const sealer = sealerFor(d);
  const { sealed } = await sealer.generate();
  const changed = new Uint8Array(sealed);
  changed[changed.length - 1]! ^= 1;
  await refusal(t, sealer.unseal(changed), 'unseal_failed', 'InvalidCiphertextException');
  const checkChanged = new Uint8Array(sealed);
  checkChanged[5]! ^= 1;
  await refusal(t, sealer.unseal(checkChanged), 'unseal_failed');
  const badVersion = new Uint8Array(sealed);
  badVersion[0] = 2;
  await refusal(t, sealer.unseal(badVersion), 'bad_storage_key');
  const dir = mkdtempSync(join(tmpdir(), 'seal-kms-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const dev = new InsecureDevSealer({ keyFile: join(dir, 'dev.key'), environment: 'sandbox', warn: () => {} });
  const e = await refusal(t, sealer.unseal((await dev.generate()).sealed), 'bad_storage_key');
  t.match(e.message, /dev-insecure sealer/);
  t.equal(d.calls.filter((c) => c.target === 'TrentService.Decrypt').length, 2, 'a blob of the wrong version or sealer never reaches KMS');
});

t.test('KMS errors keep their meaning: a disabled key, an unknown key, an unreachable service', async (t) => {
  const d = await kms(t);
  const { sealed } = await sealerFor(d).generate();
  d.enabled = false;
  await refusal(t, sealerFor(d).unseal(sealed), 'forbidden', 'DisabledException');
  d.enabled = true;
  await refusal(t, sealerFor(d, allowedEnclave, CREDENTIALS, '1234abcd-12ab-34cd-56ef-1234567890ab').unseal(sealed), 'bad_config', 'NotFoundException');
  const gone = await kms(t);
  const endpoint = gone.endpoint;
  await gone.close();
  const unreachable = new KmsSealer({ kms: { region: gone.region, endpoint, credentials: CREDENTIALS, timeoutMs: 2000 }, keyId: gone.keyId, attest: allowedEnclave });
  await refusal(t, unreachable.unseal(sealed), 'unavailable', 'NetworkError');
  await refusal(t, sealerFor(d, async () => {
    throw new Error('no NSM here');
  }).unseal(sealed), 'unavailable');
});

t.test('a KMS answer with a plaintext beside the recipient ciphertext is not used', async (t) => {
  const d = await kms(t);
  // The double never does this; a stand-in server that does shows the client refuses it.
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/x-amz-json-1.1' });
    res.end(JSON.stringify({ KeyId: d.keyArn, Plaintext: Buffer.alloc(32, 7).toString('base64'), CiphertextForRecipient: 'AAAA' }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const liar = new KmsClient({ region: d.region, endpoint: `http://127.0.0.1:${(server.address() as { port: number }).port}`, credentials: CREDENTIALS });
  const attestationDocument = authority.attest({ at: new Date(), pcrs: { 0: PCR0 } });
  await refusal(t, liar.decrypt({ keyId: d.keyId, ciphertextBlob: new Uint8Array(8), encryptionContext: {}, recipient: { attestationDocument } }), 'forbidden', 'UnexpectedPlaintext');
});
