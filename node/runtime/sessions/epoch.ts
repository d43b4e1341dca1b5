// Second phase of a reshare (docs/sessions.md "Reshare, two phases"): commit promotes the pending
// epoch (or drops the share of a node that left), abandon drops a pending epoch. No messages.
import { epochParams, epochResult } from '../../../core/session/session-contract.ts';
import type { EpochResult } from '../../../core/session/session-results.ts';
import { readParams } from '../protocols/run-protocol.ts';
import type { EpochSessionParams } from '../../../core/session/session-params.ts';
import type { SessionKind } from './session-kind.ts';
import type { NodeProtocolDeps } from './session-deps.ts';

export function epochSession(deps: NodeProtocolDeps, action: 'commit' | 'abandon'): SessionKind<EpochSessionParams, void, void, never> {
  const { vault } = deps;
  return {
    authorization: action === 'commit'
      ? { by: 'receipts', evidence: 'signed receipts of a signing threshold of the new committee that they hold the new epoch of this key' }
      : { by: 'records', evidence: 'a pending epoch this node stored and that no receipt shows committed', adds: [] },
    parse: (ctx) => readParams(epochParams, ctx.open.params),
    async preflight() {},
    // Nothing a customer signs: a commit promotes only a pending share this node stored from a
    // reshare it authorized, and an abandon only drops one.
    async authorize() {},
    // The store change is the session's whole work and its outcome is the result, so it runs in
    // start(), before the result exists; there is nothing left for commit.
    run({ params: p }) {
      let outcome: EpochResult['outcome'] = 'abandoned';
      return {
        start: async () => {
          if (action === 'commit') outcome = await vault.commit(p.keyId, p.epoch);
          else await vault.abandon(p.keyId, p.epoch);
          return { kind: 'done', out: [], result: epochResult.encode({ outcome }) };
        },
        deliver: () => ({ kind: 'abort', code: 'bad_message', message: 'no messages in this session', culprits: [] }),
        dispose() {},
      };
    },
  };
}
