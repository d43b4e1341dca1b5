// The session contract (core/session/session-contract.ts): every kind of parameters and results round
// trips with its bytes as bytes, one encoding of each direction is pinned byte for byte, and every
// malformed value is refused with the right code, by the decoder and by the encoder alike.
import t from 'tap';
import { encodeBlob } from '../../../core/codec/blob.ts';
import { InputError } from '../../../core/errors/protocol-errors.ts';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import { toHex } from '../../../common/bytes.ts';
import {
  SESSION_CONTRACT, SESSION_CONTRACT_VERSION, dkgParams, dkgResult, epochParams, epochResult, otParams, otResult, reshareParams, reshareResult, signParams, signResult,
  type SessionBlobKind, type SessionCodec,
} from '../../../core/session/session-contract.ts';
import type { KeyPackage } from '../../../core/session/key-package.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import { checkRequestId, isRequestId } from '../../../core/session/request-id.ts';

const fill = (n: number, b: number) => new Uint8Array(n).fill(b);
const point = (b: number) => '02' + b.toString(16).padStart(2, '0').repeat(32);

const pkg: KeyPackage = {
  keyId: 'vault-1', epoch: 3, threshold: 2, parties: [1, 2, 3], groupKey: point(0x11),
  verificationShares: { 1: point(0x21), 2: point(0x22), 3: point(0x23) }, groupCommitment: [point(0x11), point(0x31)], chainCode: 'cc'.repeat(32),
};

const sign: SignSessionParams = {
  keyId: 'vault-1', epoch: 3, path: [44, 60, 0, 0, 7], scheme: 'ecdsa', digests: [fill(32, 0xd1), fill(32, 0xd2)],
  intent: fill(90, 0x1e), intentSignature: fill(64, 0x51), apiKeyId: 'key_1', template: fill(40, 0x7e), endUserToken: 'a.b.c',
  trustLog: [fill(5, 0xe1), fill(7, 0xe2)],
};

/** One valid value of every kind. */
const samples: { [K in SessionBlobKind]: Parameters<(typeof SESSION_CONTRACT)[K]['encode']>[0] } = {
  'dkg-params': { keyId: 'vault-1', owner: 'org_acme', epoch: 0, threshold: 2, tier: 'hosted', trustLog: [fill(3, 1)], creationRequest: fill(20, 2), roster: fill(30, 3) },
  'sign-params': sign,
  'reshare-params': {
    keyId: 'vault-1', owner: 'org_acme', oldPkg: pkg, newEpoch: 4, newThreshold: 2, members: [{ party: 1, oldId: 1, newId: 1 }, { party: 2, oldId: 2 }, { party: 3, newId: 2 }],
    tier: 'self', roster: fill(30, 3), trustLog: [fill(3, 1)], reshareRequest: fill(20, 4),
  },
  'ot-params': { keyId: 'vault-1', epoch: 3 },
  'epoch-params': { keyId: 'vault-1', epoch: 4 },
  'dkg-result': { pkg },
  'reshare-result': { pkg: { ...pkg, epoch: 4 } },
  'sign-result': { signatures: [fill(64, 0x5a), fill(64, 0x5b)], recoveryIds: [0, 1], publicKey: fill(33, 0x02) },
  'ot-result': { keyId: 'vault-1', epoch: 3 },
  'epoch-result': { outcome: 'promoted' },
  'presign-params': { keyId: 'vault-1', epoch: 3, path: [44, 60, 0, 0, 7], entryIds: ['0a'.repeat(16), '0b'.repeat(16)] },
  'presign-result': { keyId: 'vault-1', epoch: 3, entryIds: ['0a'.repeat(16), '0b'.repeat(16)] },
  'precommit-params': { keyId: 'vault-1', epoch: 3, path: [86, 0, 0, 7], scheme: 'taproot', count: 8 },
  'precommit-result': { keyId: 'vault-1', epoch: 3, entries: [{ entryId: '0a'.repeat(16), hiding: '02' + '11'.repeat(32), binding: '03' + '22'.repeat(32), signature: fill(64, 0x5c) }] },
  'export-params': { keyId: 'vault-1', requestId: 'exp_0123456789abcdef', trustLog: [fill(3, 1)], approvals: [{ approverKey: fill(32, 0x0a), signature: fill(64, 0x5d) }] },
  'export-result': { status: 'sealed', readyAt: 1_795_086_400, approvals: 1, approvalsNeeded: 1, nodeId: 'n' + '0'.repeat(20), party: 2, enc: fill(32, 0xec), ciphertext: fill(200, 0xc7) },
};

t.test('every kind round-trips, byte fields as bytes', async (t) => {
  for (const kind of Object.keys(SESSION_CONTRACT) as SessionBlobKind[]) {
    const codec = SESSION_CONTRACT[kind] as SessionCodec<unknown>;
    t.equal(codec.kind, kind);
    const bytes = codec.encode(samples[kind]);
    t.same(codec.decode(bytes), samples[kind], `${kind}: decodes to what was encoded`);
    t.same(codec.encode(codec.decode(bytes)), bytes, `${kind}: the encoding is canonical`);
  }
  const back = signParams.decode(signParams.encode(sign));
  t.ok(back.digests.every((d) => d instanceof Uint8Array) && back.intent instanceof Uint8Array && back.intentSignature instanceof Uint8Array, 'no hex anywhere');
  t.ok(back.trustLog!.every((e) => e instanceof Uint8Array));
  // Optional fields stay absent, not undefined.
  const bare = signParams.decode(signParams.encode({ ...sign, trustLog: undefined }));
  t.notOk(Object.hasOwn(bare, 'trustLog'));
  // gRPC hands the coordinator Buffers (a Uint8Array subclass with a toJSON of its own): they go out as bytes too.
  const buffers = { ...sign, digests: sign.digests.map((d) => Buffer.from(d)), intent: Buffer.from(sign.intent), trustLog: [Buffer.from(sign.trustLog![0]!)] };
  t.same(signParams.decode(signParams.encode(buffers)), { ...sign, trustLog: [sign.trustLog![0]] });
  t.same(signParams.encode(buffers), signParams.encode({ ...sign, trustLog: [sign.trustLog![0]!] }), 'the same encoding');
  const schnorr = signResult.decode(signResult.encode({ signatures: [fill(64, 1)], publicKey: fill(32, 2) }));
  t.notOk(Object.hasOwn(schnorr, 'recoveryIds'));
  t.equal(schnorr.publicKey.length, 32, 'an x-only key');
});

t.test('the wire form is pinned', async (t) => {
  const params: SignSessionParams = {
    keyId: 'k', epoch: 1, path: [0], scheme: 'taproot', digests: [fill(32, 0xaa)], intent: new Uint8Array([1, 2]), intentSignature: fill(64, 0x55),
    apiKeyId: 'key_1', template: new Uint8Array([9]), endUserToken: '',
  };
  t.equal(
    toHex(signParams.encode(params)),
    '02000000de7b226b223a227369676e2d706172616d73222c2276223a7b2276223a322c226b65794964223a226b222c2265706f6368223a312c2270617468223a5b305d2c22736368656d65' +
      '223a22746170726f6f74222c2264696765737473223a5b7b22246279746573223a307d5d2c22696e74656e74223a7b22246279746573223a317d2c22696e74656e745369676e6174757265' +
      '223a7b22246279746573223a327d2c226170694b65794964223a226b65795f31222c2274656d706c617465223a7b22246279746573223a337d2c22656e6455736572546f6b656e223a2222' +
      '7d7d00000020aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa00000002010200000040555555555555555555555555555555555555555555555555555555' +
      '555555555555555555555555555555555555555555555555555555555555555555555555550000000109',
    'sign-params',
  );
  t.equal(
    toHex(signResult.encode({ signatures: [fill(64, 0x66)], publicKey: fill(32, 0x77) })),
    '02000000547b226b223a227369676e2d726573756c74222c2276223a7b2276223a322c227369676e617475726573223a5b7b22246279746573223a307d5d2c227075626c69634b6579223a' +
      '7b22246279746573223a317d7d7d00000040666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666666' +
      '66666666666666000000207777777777777777777777777777777777777777777777777777777777777777',
    'sign-result',
  );
  t.equal(SESSION_CONTRACT_VERSION, 2);
});

/** The code a decode of `bytes` (or an encode of `value`) is refused with. */
function refusal(f: () => unknown): string | undefined {
  try {
    f();
  } catch (err) {
    return err instanceof InputError ? err.code : `not an InputError: ${(err as Error).message}`;
  }
  return undefined;
}

t.test('a blob of another kind or contract version is bad_encoding', async (t) => {
  const blob = signParams.encode(sign);
  t.equal(refusal(() => dkgParams.decode(blob)), 'bad_encoding', 'another kind');
  t.equal(refusal(() => signParams.decode(blob.subarray(0, blob.length - 1))), 'bad_encoding', 'truncated');
  t.equal(refusal(() => signParams.decode(encodeBlob('sign-params', { ...sign, v: 1 }))), 'bad_encoding', 'version 1');
  t.equal(refusal(() => signParams.decode(encodeBlob('sign-params', { ...sign }))), 'bad_encoding', 'no version');
  t.equal(refusal(() => signParams.decode(encodeBlob('sign-params', [1, 2]))), 'bad_encoding', 'not an object');
  // The hex form of the old contract: same kind, strings for bytes.
  const hexForm = { v: 1, ...sign, digests: sign.digests.map(toHex), intent: toHex(sign.intent), intentSignature: toHex(sign.intentSignature), template: toHex(sign.template), trustLog: [] };
  t.equal(refusal(() => signParams.decode(encodeBlob('sign-params', hexForm))), 'bad_encoding');
});

t.test('every malformed field is bad_params, from the decoder and from the encoder', async (t) => {
  /** [kind, what, the sample with this change] */
  const cases: [SessionBlobKind, string, Record<string, unknown>][] = [
    ['sign-params', 'a digest of 31 bytes', { ...sign, digests: [fill(31, 1)] }],
    ['sign-params', 'a digest as hex', { ...sign, digests: ['aa'.repeat(32)] }],
    ['sign-params', 'no digest', { ...sign, digests: [] }],
    ['sign-params', '257 digests', { ...sign, digests: Array.from({ length: 257 }, () => fill(32, 1)) }],
    ['sign-params', 'an intent signature of 63 bytes', { ...sign, intentSignature: fill(63, 1) }],
    ['sign-params', 'an intent signature as hex', { ...sign, intentSignature: '55'.repeat(64) }],
    ['sign-params', 'an intent as hex', { ...sign, intent: toHex(sign.intent) }],
    ['sign-params', 'an intent over 256 KiB', { ...sign, intent: new Uint8Array(256 * 1024 + 1) }],
    ['sign-params', 'a template over 1 MiB', { ...sign, template: new Uint8Array(1024 * 1024 + 1) }],
    ['sign-params', 'an unknown scheme', { ...sign, scheme: 'rsa' }],
    ['sign-params', 'a path step over 2^32-1', { ...sign, path: [2 ** 32] }],
    ['sign-params', 'a path step that is not an integer', { ...sign, path: [1.5] }],
    ['sign-params', 'a path of 256 steps', { ...sign, path: Array.from({ length: 256 }, () => 0) }],
    ['sign-params', 'an empty trust-log entry', { ...sign, trustLog: [new Uint8Array()] }],
    ['sign-params', 'a trust log that is not a list', { ...sign, trustLog: fill(3, 1) }],
    ['sign-params', 'an API key id of 129 characters', { ...sign, apiKeyId: 'k'.repeat(129) }],
    ['sign-params', 'an end-user token over 16 KiB', { ...sign, endUserToken: 'x'.repeat(16 * 1024 + 1) }],
    ['sign-params', 'an empty key id', { ...sign, keyId: '' }],
    ['sign-params', 'a negative epoch', { ...sign, epoch: -1 }],
    ['sign-params', 'an epoch as a string', { ...sign, epoch: '3' }],
    ['sign-params', 'a missing field', { ...sign, template: undefined }],
    ['sign-params', 'an unknown field', { ...sign, extra: 1 }],
    ['sign-params', 'null for an optional field', { ...sign, trustLog: null }],
    ['dkg-params', 'a threshold of 0', { ...samples['dkg-params'], threshold: 0 }],
    ['dkg-params', 'a threshold over 64', { ...samples['dkg-params'], threshold: 65 }],
    ['dkg-params', 'a roster as hex', { ...samples['dkg-params'], roster: 'abcd' }],
    ['dkg-params', 'a roster over 64 KiB', { ...samples['dkg-params'], roster: new Uint8Array(64 * 1024 + 1) }],
    ['dkg-params', 'a creation request as hex', { ...samples['dkg-params'], creationRequest: 'abcd' }],
    ['dkg-params', 'an empty tier', { ...samples['dkg-params'], tier: '' }],
    ['reshare-params', 'no members', { ...samples['reshare-params'], members: [] }],
    ['reshare-params', 'a member with party 0', { ...samples['reshare-params'], members: [{ party: 0, newId: 1 }] }],
    ['reshare-params', 'a member with an unknown field', { ...samples['reshare-params'], members: [{ party: 1, role: 'dealer' }] }],
    ['reshare-params', '65 members', { ...samples['reshare-params'], members: Array.from({ length: 65 }, (_, i) => ({ party: i + 1, newId: i + 1 })) }],
    ['reshare-params', 'a group key of 32 bytes', { ...samples['reshare-params'], oldPkg: { ...pkg, groupKey: '11'.repeat(32) } }],
    ['reshare-params', 'a group key in upper case', { ...samples['reshare-params'], oldPkg: { ...pkg, groupKey: point(0xab).toUpperCase() } }],
    ['reshare-params', 'a chain code of 31 bytes', { ...samples['reshare-params'], oldPkg: { ...pkg, chainCode: 'cc'.repeat(31) } }],
    ['reshare-params', 'a verification share under a key that is no index', { ...samples['reshare-params'], oldPkg: { ...pkg, verificationShares: { x: point(1) } } }],
    ['reshare-params', 'a package without parties', { ...samples['reshare-params'], oldPkg: { ...pkg, parties: [] } }],
    ['reshare-params', 'a package with an unknown field', { ...samples['reshare-params'], oldPkg: { ...pkg, share: '01' } }],
    ['ot-params', 'an epoch over 2^32-1', { keyId: 'k', epoch: 2 ** 32 }],
    ['epoch-params', 'a key id of 129 characters', { keyId: 'k'.repeat(129), epoch: 1 }],
    ['dkg-result', 'no package', {}],
    ['reshare-result', 'a package with a 31-byte commitment', { pkg: { ...pkg, groupCommitment: ['02' + '11'.repeat(31)] } }],
    ['sign-result', 'a signature of 63 bytes', { signatures: [fill(63, 1)], publicKey: fill(33, 2) }],
    ['sign-result', 'no signature', { signatures: [], publicKey: fill(33, 2) }],
    ['sign-result', 'a public key of 34 bytes', { signatures: [fill(64, 1)], publicKey: fill(34, 2) }],
    ['sign-result', 'fewer recovery ids than signatures', { signatures: [fill(64, 1), fill(64, 1)], recoveryIds: [0], publicKey: fill(33, 2) }],
    ['sign-result', 'a recovery id of 4', { signatures: [fill(64, 1)], recoveryIds: [4], publicKey: fill(33, 2) }],
    ['ot-result', 'a missing epoch', { keyId: 'k' }],
    ['epoch-result', 'an unknown outcome', { outcome: 'deleted' }],
    ['presign-params', 'no entry id', { ...samples['presign-params'], entryIds: [] }],
    ['presign-params', 'an entry id of 15 bytes', { ...samples['presign-params'], entryIds: ['0a'.repeat(15)] }],
    ['presign-params', 'an entry id named twice', { ...samples['presign-params'], entryIds: ['0a'.repeat(16), '0a'.repeat(16)] }],
    ['presign-params', '33 entries', { ...samples['presign-params'], entryIds: Array.from({ length: 33 }, (_, i) => i.toString(16).padStart(32, '0')) }],
    ['sign-params', 'fewer presignature entries than digests', { ...sign, presignatures: ['0a'.repeat(16)] }],
    ['sign-params', 'a presignature entry in upper case', { ...sign, presignatures: ['0A'.repeat(16), '0b'.repeat(16)] }],
    ['sign-params', 'presignature entries for a Schnorr signing', { ...sign, scheme: 'taproot', presignatures: ['0a'.repeat(16), '0b'.repeat(16)] }],
    ['presign-result', 'a missing epoch', { keyId: 'k', entryIds: ['0a'.repeat(16)] }],
  ];
  for (const [kind, what, value] of cases) {
    const codec = SESSION_CONTRACT[kind] as SessionCodec<unknown>;
    // A blob written past the encoder's checks, as a faulty or hostile peer would send it.
    const raw = encodeBlob(kind, { v: SESSION_CONTRACT_VERSION, ...value });
    t.equal(refusal(() => codec.decode(raw)), 'bad_params', `${kind}, ${what}: the decoder refuses it`);
    t.equal(refusal(() => codec.encode(value)), 'bad_params', `${kind}, ${what}: the encoder refuses it`);
  }
  t.throws(() => signParams.decode(encodeBlob('sign-params', { v: 2, ...sign, digests: [fill(31, 1)] })), { message: /sign-params\.digests\[0\]: 31 bytes, not 32/ }, 'the message names the field');
});

t.test('nothing but the contract\'s fields goes out', async (t) => {
  const withExtra = { ...samples['ot-params'], requestId: 'r' } as unknown as Parameters<typeof otParams.encode>[0];
  t.equal(refusal(() => otParams.encode(withExtra)), 'bad_params');
  t.same(epochParams.decode(epochParams.encode({ keyId: 'k', epoch: 0 })), { keyId: 'k', epoch: 0 });
  t.same(otResult.decode(otResult.encode({ keyId: 'k', epoch: 0 })), { keyId: 'k', epoch: 0 });
  t.same(epochResult.decode(epochResult.encode({ outcome: 'abandoned' })), { outcome: 'abandoned' });
  const pooled = { ...sign, presignatures: ['0a'.repeat(16), '0b'.repeat(16)] };
  t.same(signParams.decode(signParams.encode(pooled)).presignatures, pooled.presignatures, 'a signing may name one presignature entry per digest');
  t.same(dkgResult.decode(dkgResult.encode({ pkg })).pkg, pkg);
  t.equal(JSON.stringify(reshareResult.decode(reshareResult.encode({ pkg })).pkg), JSON.stringify(pkg), 'a package keeps its field order (nodes compare packages by their JSON)');
  t.same(reshareParams.decode(reshareParams.encode(samples['reshare-params'])).members, samples['reshare-params'].members);
});

t.test('request ids: empty, or up to 128 characters of [A-Za-z0-9._:-]', async (t) => {
  for (const ok of ['', 'txn_0193a1b2c3d4e5f6a7b8c9d0', 'vlt_01:job_02', 'a.b-c:d_e', 'x'.repeat(128)]) t.ok(isRequestId(ok), JSON.stringify(ok));
  for (const bad of ['x'.repeat(129), 'txn/1', 'a b', 'é', 'a\nb', '{}']) {
    t.notOk(isRequestId(bad), JSON.stringify(bad));
    const err = t.throws(() => checkRequestId(bad)) as unknown;
    t.ok(err instanceof CustodyError && err.code === 'invalid_request' && err.kind === 'invalid', `${JSON.stringify(bad)}: invalid_request`);
  }
  t.notOk(isRequestId(7));
});
