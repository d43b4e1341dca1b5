// The one codec of everything a session carries between the coordinator and the nodes: the parameters
// the coordinator opens each kind of session with (session-params.ts) and the public result each node
// reports (session-results.ts). Both sides encode and decode with this table, so neither declares a
// shape of its own. Byte fields (digests, the intent and its signature, the template, trust-log
// entries, rosters, signed requests, signatures) travel as blob sections (core/codec/blob.ts), never as
// hex; a key package keeps the protocols' hex points.
//
// Wire form: a version-2 blob of kind `kind` whose value is `{ v: SESSION_CONTRACT_VERSION, ...fields }`.
// Decoders check everything: a blob that is not of the kind, of another contract version (bad_encoding),
// or with a field missing, unknown, mistyped or out of its bounds (bad_params) is refused with an
// InputError. Encoders run the same checks, so a malformed request fails before any session opens.
// Version 1 was the same fields with hex strings for bytes; it is no longer read.
import { decodeBlob, encodeBlob } from '../codec/blob.ts';
import { InputError } from '../errors/protocol-errors.ts';
import { readDkgParams, readEpochParams, readExportParams, readPrecommitParams, readPresignParams, readReshareParams, readSignParams } from './session-params.ts';
import { readEpochResult, readExportResult, readOtResult, readPackageResult, readPrecommitResult, readPresignResult, readSignResult } from './session-results.ts';
import type { Fields } from './shape.ts';

export const SESSION_CONTRACT_VERSION = 2;

export interface SessionCodec<T> {
  readonly kind: string;
  encode(value: T): Uint8Array;
  decode(bytes: Uint8Array): T;
}

function codec<T>(kind: string, read: (v: unknown, what: string) => T): SessionCodec<T> {
  return {
    kind,
    // `read` builds a fresh value field by field in a fixed order: the encoding is canonical, and
    // nothing but the contract's fields goes out.
    encode: (value) => encodeBlob(kind, { v: SESSION_CONTRACT_VERSION, ...read(value, kind) }),
    decode(bytes) {
      const raw = decodeBlob<unknown>(kind, bytes);
      if (typeof raw !== 'object' || raw === null || (raw as Fields).v !== SESSION_CONTRACT_VERSION) {
        throw new InputError('bad_encoding', `${kind}: not session contract version ${SESSION_CONTRACT_VERSION}`);
      }
      const { v: _v, ...fields } = raw as Fields;
      return read(fields, kind);
    },
  };
}

export const dkgParams = codec('dkg-params', readDkgParams);
export const signParams = codec('sign-params', readSignParams);
export const reshareParams = codec('reshare-params', readReshareParams);
export const otParams = codec('ot-params', readEpochParams);
export const epochParams = codec('epoch-params', readEpochParams);
export const dkgResult = codec('dkg-result', readPackageResult);
export const reshareResult = codec('reshare-result', readPackageResult);
export const signResult = codec('sign-result', readSignResult);
export const otResult = codec('ot-result', readOtResult);
export const epochResult = codec('epoch-result', readEpochResult);
export const presignParams = codec('presign-params', readPresignParams);
export const presignResult = codec('presign-result', readPresignResult);
export const precommitParams = codec('precommit-params', readPrecommitParams);
export const precommitResult = codec('precommit-result', readPrecommitResult);
export const exportParams = codec('export-params', readExportParams);
export const exportResult = codec('export-result', readExportResult);

/** Every session blob, by kind. */
export const SESSION_CONTRACT = {
  'dkg-params': dkgParams, 'sign-params': signParams, 'reshare-params': reshareParams, 'ot-params': otParams, 'epoch-params': epochParams,
  'dkg-result': dkgResult, 'reshare-result': reshareResult, 'sign-result': signResult, 'ot-result': otResult, 'epoch-result': epochResult,
  'presign-params': presignParams, 'presign-result': presignResult,
  'precommit-params': precommitParams, 'precommit-result': precommitResult,
  'export-params': exportParams, 'export-result': exportResult,
} as const;

export type SessionBlobKind = keyof typeof SESSION_CONTRACT;
