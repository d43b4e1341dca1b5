// Drives one session kind through parse → preflight → authorize → run → commit and hands the session
// host a PartyProtocol. Authorization is enforced here, not by the kinds: a kind's protocol receives no
// payload, so sends nothing past its first round, before `authorize` resolved.
import { SessionRefused, type SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { Finish } from '../protocols/run-protocol.ts';
import type { Keep, SessionKind } from './session-kind.ts';

export async function runSession<P, L, G, O>(kind: SessionKind<P, L, G, O>, ctx: SessionContext): Promise<PartyProtocol> {
  const params = kind.parse(ctx);
  const local = await kind.preflight(ctx, params);
  // Every exit below frees what preflight holds: a refusal, an error, or the session's end (cancel,
  // link loss, deadline) at any step before the protocol exists. A built protocol frees it on dispose.
  const session = { ctx, params, local };
  let granted: { grant: G } | undefined;
  const keep: Keep<O> = (result, output): Finish => {
    const commit = kind.commit?.bind(kind);
    if (!commit) return { result };
    return {
      result,
      commit: () => {
        if (!granted) throw new Error('a session reached its result before it was authorized');
        return commit({ ...session, grant: granted.grant }, output);
      },
    };
  };
  try {
    stillOpen(ctx);
    if (kind.firstRoundIndependent) {
      return firstRoundBeforeAuthorization(kind.run(session, keep), async () => {
        granted = { grant: await kind.authorize(session) };
      });
    }
    granted = { grant: await kind.authorize(session) };
    stillOpen(ctx);
    return kind.run({ ...session, grant: granted.grant }, keep);
  } catch (err) {
    kind.release?.(local);
    throw err;
  }
}

/** Stops a session that ended here while a step ran: nothing more is built for it. */
function stillOpen(ctx: SessionContext): void {
  if (ctx.signal?.aborted) throw new SessionRefused('session_ended', 'the session ended before it could run');
}

/**
 * Lets `run` send its first round (start) at once and runs `authorize` as the session host's admit
 * check. Every later step needs a delivered payload, and none is delivered before `authorize`
 * resolved: a delivery before that, or a first round that finishes the run, is a bug and fails the
 * session without sending anything.
 */
function firstRoundBeforeAuthorization(run: PartyProtocol, authorize: () => Promise<void>): PartyProtocol {
  let authorized = false;
  return {
    async start() {
      const step = await run.start();
      if (step.kind === 'done') throw new Error('a request-independent first round may not finish the run');
      return step;
    },
    deliver(from, round, payload, broadcast) {
      if (!authorized) throw new Error('a payload was delivered before the session was authorized');
      return run.deliver(from, round, payload, broadcast);
    },
    dispose: () => run.dispose(),
    admit: async () => {
      await authorize();
      authorized = true;
    },
  };
}
