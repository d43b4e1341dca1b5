// The one interface every node session kind implements, in the order the runner calls it:
// parse → preflight → authorize → run → commit (docs/sessions.md "What a node checks").
import type { SessionContext } from '../session-host.ts';
import type { PartyProtocol } from '../party-protocol.ts';
import type { Finish } from '../protocols/run-protocol.ts';

/** A session that passed parse and preflight: its parameters and what preflight read or holds. */
export interface Preflighted<P, L> {
  ctx: SessionContext;
  params: P;
  local: L;
}

/** A session whose customer material `authorize` accepted. */
export interface Authorized<P, L, G> extends Preflighted<P, L> {
  grant: G;
}

/**
 * Ends a run: `result` is public; `output` is handed to the kind's `commit`, which the runner has
 * the session host await before the result leaves.
 */
export type Keep<O> = (result: Uint8Array, output: O) => Finish;

/**
 * What a session kind acts on (docs/sessions.md "What authorizes each session"): the evidence its
 * `authorize` verifies itself before the kind stores or releases anything. The coordinator's word is
 * never evidence. Every kind declares one, so a new kind cannot leave it out, and
 * test/node/session-authorization.unit.ts runs every kind on a coordinator's word alone and checks the
 * declaration holds.
 * - `customer`: a signature of the key's owner under a key of its trust log (an intent, a creation or a
 *   reshare request); without it the kind changes nothing.
 * - `receipts`: signed statements of the node's peers, checked against identity keys the node pinned
 *   itself; without enough of them the kind changes nothing.
 * - `records`: the node's own records only (the committee pinned with a share it holds). Such a kind
 *   may add fresh material under the record prefixes of `adds` and changes nothing else: no share, no
 *   committee, no claim.
 */
export type Authorization =
  | { readonly by: 'customer'; readonly evidence: string }
  | { readonly by: 'receipts'; readonly evidence: string }
  | { readonly by: 'records'; readonly evidence: string; readonly adds: readonly string[] };

interface SessionKindBase<P, L, G, O> {
  /** What authorizes the session, stated where the kind is defined (see Authorization). */
  readonly authorization: Authorization;
  /** Decodes the versioned parameter blob of SessionOpen. */
  parse(ctx: SessionContext): P;
  /** The node's own checks, with nothing signed by the customer: key and epoch held, pinned committee. */
  preflight(ctx: SessionContext, params: P): Promise<L>;
  /** The customer's signed material, and for signing the durable claims that make it single-use. */
  authorize(session: Preflighted<P, L>): Promise<G>;
  /** What is stored before the result leaves the node. */
  commit?(session: Authorized<P, L, G>, output: O): Promise<void>;
  /** Frees what preflight holds when the session is refused before `run` built its protocol. */
  release?(local: L): void;
}

/** A kind that sends nothing before it is authorized. */
export interface AuthorizedFirstKind<P, L, G, O> extends SessionKindBase<P, L, G, O> {
  readonly firstRoundIndependent?: false;
  run(session: Authorized<P, L, G>, keep: Keep<O>): PartyProtocol;
}

/**
 * A kind whose first round does not depend on the request (FROST nonce commitments, RFC 9591 §5.1):
 * its protocol is built and started while `authorize` runs, and the runner lets nothing but that
 * round's messages leave until `authorize` resolved.
 */
export interface IndependentFirstRoundKind<P, L, G, O> extends SessionKindBase<P, L, G, O> {
  readonly firstRoundIndependent: true;
  run(session: Preflighted<P, L>, keep: Keep<O>): PartyProtocol;
}

export type SessionKind<P, L, G, O> = AuthorizedFirstKind<P, L, G, O> | IndependentFirstRoundKind<P, L, G, O>;
