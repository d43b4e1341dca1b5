// FROST signing session (RFC 9591; taproot or BIP-340 over node/protocols/frost/). Its first round,
// fresh nonce commitments independent of the message (RFC 9591 §5.1), goes out while the request is
// authorized; no signature share is made before authorization passed.
import { bytesToHex, hexToBytes } from '@noble/hashes/utils.js';
import { signParams, signResult } from '../../../core/session/session-contract.ts';
import { frostSign, type FrostSuite } from '../../protocols/frost/frost-sign.ts';
import { keyShareParam } from '../../protocols/keys/key-package.ts';
import { SessionRefused } from '../session-host.ts';
import type { SignGrant } from '../authorization/sign-authorizer.ts';
import { readParams, runProtocol } from '../protocols/run-protocol.ts';
import type { StoredShare } from '../../storage/vault-shares.ts';
import type { SignSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';
import { keyAtEpoch } from './key-at-epoch.ts';
import { sessionDigest } from './session-digest.ts';
import { authorizeSigning } from './sign-authorization.ts';

export function signSchnorrSession(deps: NodeProtocolDeps): SessionKind<SignSessionParams, StoredShare, SignGrant, never> {
  return {
    firstRoundIndependent: true,
    parse: (ctx) => readParams(signParams, ctx.open.params),
    async preflight(ctx, p) {
      const stored = await keyAtEpoch(deps.vault, ctx, p.keyId, p.epoch);
      if (p.scheme !== 'taproot' && p.scheme !== 'bip340') throw new SessionRefused('wrong_scheme', 'Schnorr sessions sign taproot or bip340');
      return stored;
    },
    authorize: ({ ctx, params, local }) => authorizeSigning(deps, ctx, params, local),
    run({ ctx, params: p, local: stored }) {
      const me = ctx.myIndex;
      const signers = ctx.parties.map((x) => x.index);
      const key = keyShareParam(stored.key);
      const suite: FrostSuite = p.scheme as FrostSuite;
      // The protocol takes its message and gives its signature in hex, as it owns them.
      const params = p.digests.map((digest, i) => ({ sessionId: bytesToHex(sessionDigest(ctx.open.sessionId, i)), suite, message: bytesToHex(digest), signers, me, key, path: p.path }));
      return runProtocol(frostSign, me, params, (sigs) => ({ result: signResult.encode({ signatures: sigs.map((s) => hexToBytes(s.signature)), publicKey: hexToBytes(sigs[0]!.publicKey) }) }));
    },
  };
}
