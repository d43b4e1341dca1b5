// The whole stack with tokenization on (docs/platform/tokenization.md), for the tokenization journey and
// its bench: real processes (coordinator, three service nodes, optionally the organization's self node,
// the API) and a real anvil, the API configured the way `npm start` configures it
// (deploy/local/sandbox-tokenization.mjs: the shared Safe infrastructure deployed first, the deployer key
// file given to the API), and a bearer key of the organization's sandbox workspace with `tokenization.manage`.
// The helpers drive a token's admin Safe as a customer does: propose an operation, build each owner vault's
// kind-3 intent with the SDK (prepareSafeTx) from what the operation asks, post it to
// `operations/{opId}/signatures`, and wait for the execution on chain.
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { startStack, type Stack } from './stack.ts';
import { waitUntil } from '../cluster/cluster-harness.ts';
import type { Wallet } from '../../api/sdk/client.ts';
// @ts-expect-error: a plain ES module of the launcher, without types
import { sandboxTokenization } from '../../deploy/local/sandbox-tokenization.mjs';

const root = resolve(import.meta.dirname, '../..');

export interface PendingIntent {
  wallet_id: string; owner: string; safe: string; to: string; value: string; data: string; operation: 0 | 1;
  safe_tx_gas: string; base_gas: string; gas_price: string; gas_token: string; refund_receiver: string; safe_nonce: string;
}
export interface OperationView {
  id: string; token_id: string; kind: string; state: string; safe_nonce: string; safe_tx_hash: string; tx_hash: string | null; threshold: number;
  signatures: { owner: string; how: string; wallet_id: string | null; transaction_id: string | null }[];
  pending_intents: PendingIntent[]; failure: { reason: string; message: string; error_name: string | null } | null;
}
export interface TokenView {
  id: string; kind: string; status: string; address: `0x${string}`; safe: `0x${string}`; forwarder: `0x${string}`; deploy_attempts: number;
  steps: { name: string; address: string; status: string }[]; failure: unknown; admin: { owners: { address: string; wallet_id: string | null }[]; threshold: number };
}
export interface Reply { status: number; json: any } // eslint-disable-line @typescript-eslint/no-explicit-any

export interface TokenizationStack extends Stack {
  /** The tokenization deployer (anvil's development account 7, as under `npm start`). */
  deployer: `0x${string}`;
  /** A platform API call with the workspace's admin bearer key. */
  platform(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Reply>;
  /** Polls a token until `done` holds. */
  waitToken(id: string, done: (t: TokenView) => boolean, what: string): Promise<TokenView>;
  /** Proposes an operation; 201 or throws. */
  propose(tokenId: string, path: string, body: unknown, key: string): Promise<OperationView>;
  /** Each wallet's kind-3 intent, built and signed with the SDK, posted at once; the operation afterwards. */
  sign(op: OperationView, wallets: Wallet[], key: string): Promise<OperationView>;
  /** Polls an operation until it is confirmed or failed. */
  settled(tokenId: string, opId: string, everyMs?: number): Promise<OperationView>;
  /** propose, sign, settled. */
  operation(tokenId: string, path: string, body: unknown, wallets: Wallet[], key: string): Promise<OperationView>;
}

export async function startTokenizationStack(opts: { selfNode?: boolean; moreKeys?: string[]; apiEnv?: Record<string, string> } = {}): Promise<TokenizationStack> {
  let deployer = '' as `0x${string}`;
  const stack = await startStack({
    anvil: true, bearerKey: true, bearerRole: 'admin', ...(opts.selfNode ? { selfNode: true } : {}), ...(opts.moreKeys ? { moreKeys: opts.moreKeys } : {}),
    apiEnv: async (anvil, cluster) => {
      const load = (path: string) => import(pathToFileURL(join(root, `${path}.ts`)).href);
      const set = await sandboxTokenization({ data: cluster.dir, rpcUrl: anvil!.url, load }) as { env: Record<string, string>; deployer: `0x${string}` };
      deployer = set.deployer;
      return { ...set.env, API_WEBHOOK_ALLOWED_DESTINATIONS: '127.0.0.1', ...opts.apiEnv };
    },
  });
  const platform = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Reply> => {
    const r = await fetch(`${stack.base}/v1${path}`, {
      method, headers: { authorization: `Bearer ${stack.bearer!}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    });
    return { status: r.status, json: await r.json() };
  };
  const ok = (r: Reply, status: number, what: string) => {
    if (r.status !== status) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.json)}`);
    return r.json;
  };
  const tokenPath = (id: string) => `/tokenization/tokens/${id}`;
  const getOp = async (tokenId: string, opId: string) => ok(await platform('GET', `${tokenPath(tokenId)}/operations/${opId}`), 200, 'reading an operation') as OperationView;

  const waitToken = async (id: string, done: (t: TokenView) => boolean, what: string) => {
    let last: TokenView | undefined;
    await waitUntil(async () => done(last = ok(await platform('GET', tokenPath(id)), 200, 'reading a token') as TokenView), 60_000, what, 50);
    return last!;
  };
  const propose = async (tokenId: string, path: string, body: unknown, key: string) =>
    ok(await platform('POST', `${tokenPath(tokenId)}/${path}`, body, { 'idempotency-key': key }), 201, `proposing ${path}`) as OperationView;
  const sign = async (op: OperationView, wallets: Wallet[], key: string) => {
    await Promise.all(wallets.map(async (wallet) => {
      const p = op.pending_intents.find((x) => x.wallet_id === wallet.id);
      if (!p) throw new Error(`operation ${op.id} asks no intent of ${wallet.id}`);
      const { body } = stack.client.prepareSafeTx({
        wallet, safe: p.safe, to: p.to, value: p.value, data: p.data, operation: p.operation, safeTxGas: p.safe_tx_gas, baseGas: p.base_gas, gasPrice: p.gas_price,
        gasToken: p.gas_token, refundReceiver: p.refund_receiver, safeNonce: p.safe_nonce, idempotencyKey: `${key}-${wallet.id}`,
      });
      ok(await platform('POST', `${tokenPath(op.token_id)}/operations/${op.id}/signatures`, { wallet_id: wallet.id, intent: body.intent, intent_signature: body.intent_signature }), 200, `${wallet.id} signing ${op.kind}`);
    }));
    return getOp(op.token_id, op.id);
  };
  const settled = async (tokenId: string, opId: string, everyMs = 50) => {
    let last: OperationView | undefined;
    await waitUntil(async () => ['confirmed', 'failed'].includes((last = await getOp(tokenId, opId)).state), 60_000, `operation ${opId} to end`, everyMs);
    return last!;
  };
  return {
    ...stack, deployer, platform, waitToken, propose, sign, settled,
    async operation(tokenId, path, body, wallets, key) {
      const op = await propose(tokenId, path, body, key);
      await sign(op, wallets, key);
      return settled(tokenId, op.id);
    },
  };
}
