// FROST precommit session (docs/protocols/pools.md "FROST: precommitted nonces"): RFC 9591 round 1 done
// ahead of any signing request. Each node draws its own nonce pairs for the key epoch, the signer set
// (the session's parties), the suite and the derivation path of the parameters, under entry ids it draws
// itself (128 random bits), seals them in its pool (storage/frost-nonce-store.ts) and syncs, and only
// then reports the commitments, each signed with its node identity key over a statement that binds key,
// epoch, suite, signer set, path, party, entry id and both points: a coordinator cannot attribute to a
// node commitments it did not make. No messages between nodes.
//
// Nonce pairs sign nothing, so no customer authorization is asked for; the node checks what a signing
// would (the key and epoch held, every party the pinned committee member, at least the threshold of
// signers, a path that derives) and refuses without an anchor or over its bound.
import { bytesToHex } from '@noble/hashes/utils.js';
import { precommitParams, precommitResult } from '../../../core/session/session-contract.ts';
import type { PrecommitSessionParams } from '../../../core/session/session-params.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import { nativePrimitives } from '../native-primitives.ts';
import { frostPrecommit, precommitStatement, type FrostPrecommitment, type PrecommitBinding } from '../../protocols/frost/frost-precommit.ts';
import { preparedGroupKey } from '../../protocols/frost/prepared-key.ts';
import { SessionRefused, type SessionContext } from '../session-host.ts';
import { readParams, systemRng } from '../protocols/run-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { FrostNonceBinding, FrostNonceStore } from '../../storage/frost-nonce-store.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';

/** What a nonce pair made or used in this session is bound to. Signing is key-path only: no script tree. */
export function frostNonceBinding(stored: StoredShare, ctx: SessionContext, epoch: number, path: number[], scheme: 'taproot' | 'bip340'): FrostNonceBinding {
  let groupKey: string;
  try {
    groupKey = preparedGroupKey(stored.key.pkg, path, scheme === 'taproot');
  } catch {
    throw new SessionRefused('bad_params', 'the derivation path cannot be derived from a shared key');
  }
  return { epoch, signers: ctx.parties.map((x) => x.index).sort((a, b) => a - b), suite: scheme, path: [...path], merkleRoot: '', publicKey: groupKey.slice(2) };
}

/** The statement fields of a binding, for the identity signature. */
export const statementBinding = (keyId: string, b: FrostNonceBinding): PrecommitBinding => ({ keyId, epoch: b.epoch, suite: b.suite, signers: b.signers, path: b.path, merkleRoot: b.merkleRoot });

interface PrecommitLocal {
  stored: StoredShare;
  pool: FrostNonceStore;
  sign: (message: Uint8Array) => Uint8Array;
  binding: FrostNonceBinding;
  entryIds: string[];
}

export function precommitFrostSession(deps: NodeProtocolDeps): SessionKind<PrecommitSessionParams, PrecommitLocal, void, FrostPrecommitment[]> {
  return {
    authorization: { by: 'records', evidence: 'the committee pinned with the share of this key epoch, and a pool within its limits', adds: ['frost-nonce/{key}/'] },
    parse: (ctx) => readParams(precommitParams, ctx.open.params),
    async preflight(ctx, p) {
      const pool = deps.frostNonces;
      if (!pool) throw new SessionRefused('nonce_pool_unavailable', 'this node keeps no FROST nonce store');
      const identity = deps.identity;
      if (!identity) throw new SessionRefused('nonce_pool_unavailable', 'this node cannot sign its commitments');
      const stored = await keyAtEpoch(deps.vault, ctx, p.keyId, p.epoch);
      if (ctx.parties.length < stored.key.pkg.threshold) throw new SessionRefused('bad_parties', `nonce pairs need at least ${stored.key.pkg.threshold} signers`);
      const binding = frostNonceBinding(stored, ctx, p.epoch, p.path, p.scheme);
      const entryIds = Array.from({ length: p.count }, () => bytesToHex(systemRng(16)));
      // Refuses without an anchor or over the bound.
      await pool.admit(p.keyId, p.epoch, entryIds);
      return { stored, pool, sign: (m) => identity.sign(m), binding, entryIds };
    },
    // Nothing a customer asked for: a nonce pair signs nothing until a signing session is authorized on
    // its own and takes it.
    async authorize() {},
    run({ ctx, params: p, local: { stored, binding, entryIds, sign } }, keep) {
      let made: FrostPrecommitment[] = [];
      return {
        start: async () => {
          made = frostPrecommit({ suite: p.scheme, me: ctx.myIndex, key: keyShareParam(stored.key), path: p.path }, p.count, systemRng, deps.primitives ?? nativePrimitives);
          const b = statementBinding(p.keyId, binding);
          const entries = made.map((m, i) => ({ entryId: entryIds[i]!, ...m.commitment, signature: sign(precommitStatement(b, ctx.myIndex, entryIds[i]!, m.commitment)) }));
          const f = keep(precommitResult.encode({ keyId: p.keyId, epoch: p.epoch, entries }), made);
          return { kind: 'done', out: [], result: f.result, ...(f.commit ? { commit: f.commit } : {}) };
        },
        deliver: () => ({ kind: 'abort', code: 'bad_message', message: 'no messages in this session', culprits: [] }),
        dispose() {
          for (const m of made) {
            m.nonces.hiding.zeroize();
            m.nonces.binding.zeroize();
          }
          made = [];
        },
      };
    },
    // Sealed and synced before the commitments leave: a coordinator told of an entry can count on it.
    async commit({ params: p, local: { pool, binding, entryIds } }, made) {
      try {
        await pool.put(p.keyId, binding, made.map((m, i) => ({ entryId: entryIds[i]!, nonces: m.nonces })));
      } finally {
        for (const m of made) {
          m.nonces.hiding.zeroize();
          m.nonces.binding.zeroize();
        }
      }
    },
  };
}
