// Vault policies (docs/policies.md): GET and PUT /v1/vaults/{vaultId}/policy, the transactions waiting for
// approvals (GET /v1/vaults/{vaultId}/approvals), and an approver's approval or rejection of one
// (POST /v1/transactions/{txId}/approvals, /rejections). The nodes verify all of it again themselves.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import { ApprovalBody, Transaction } from '../../../core/api-schemas/transactions.ts';
import type { TransactionService } from '../../transactions/transaction-service.ts';
import { TRANSACTIONS } from '../../transactions/collections.ts';
import { transactionView } from './transactions.ts';
import { Nullable } from './schema-helpers.ts';
import { QueryInteger } from '../../../core/api-schemas/query.ts';
import type { PolicyDocument } from '../../../core/policy/policy-document.ts';

const VaultId = Type.Object({ vaultId: Type.String({ minLength: 1, maxLength: 64 }) });
const TxId = Type.Object({ txId: Type.String({ minLength: 1, maxLength: 64 }) });
const Doc = Type.Record(Type.String(), Type.Unknown(), { description: 'a policy document, format 1 (docs/policies.md "The document")' });
const DocOut = Type.Unsafe<PolicyDocument>({ type: 'object', additionalProperties: true, description: 'a policy document, format 1 (docs/policies.md "The document")' });
const Version = Type.Object({
  version: Type.Integer(), sha256: Type.String({ description: 'the document\'s hash: what a policy change\'s approvals sign' }),
  effective_at: Type.Integer({ description: 'Unix seconds from which it is in force, as the API saw the change (each node counts a loosening\'s delay from when it first sees it)' }),
  tightening: Type.Boolean({ description: 'a change that only tightens the version before it applies at once' }),
  policy: DocOut,
});
const PolicyView = Type.Object({
  vault_id: Type.String(),
  in_force: Nullable(Version), pending: Type.Array(Version, { description: 'accepted changes waiting out the delay' }),
  refused: Type.Array(Type.Object({ version: Type.Integer(), reason: Type.String() })),
  chain: Nullable(Type.Object({
    seq: Type.Integer(), hash: Type.String(), until: Type.Integer(),
    link: Type.String({ description: 'the head link, hex: the SDK decodes it and signs the next intent\'s link after it' }),
  }, { description: 'the head of the vault\'s intent chain' })),
  legacy_policy: Nullable(Type.Record(Type.String(), Type.Unknown(), { description: 'the policy fixed at the vault\'s creation, enforced by the API until a policy is in force' })),
  migration: Nullable(DocOut),
});
const PutBody = Type.Object({
  policy: Doc,
  approvals: Type.Optional(Type.Array(ApprovalBody, { maxItems: 64, description: 'approvals of the change by the approvers the policy in force names for `policy_change` quorums' })),
}, { additionalProperties: false });

export const vaultPolicyRoutes: FastifyPluginAsyncTypebox<{ transactions: TransactionService }> = async (app, { transactions }) => {
  const policies = transactions.policies;

  app.get('/vaults/:vaultId/policy', {
    schema: {
      summary: 'Read a vault\'s policy: the version in force, changes waiting out their delay, and the head of its intent chain',
      description: 'As the API reads the customer-signed trust log, by the rules every signer node applies (docs/policies.md). `migration` offers the legacy policy as a version-1 document to sign, while the vault has none.',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId, response: { 200: PolicyView, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (req) => policies.view(req.caller!.org, req.params.vaultId));

  app.put('/vaults/:vaultId/policy', {
    schema: {
      summary: 'Sign a new version of a vault\'s policy into the trust log',
      description: 'The signed request itself goes into the organization\'s trust log; every node applies it by the policy in force: its `policy_change` quorums must approve (else 403 approval_required), a tightening is in force at once, any other change after the policy\'s `change_delay_seconds`. '
        + 'A version not above the latest is 409; a malformed document 400 bad_policy. Emits `vault.policy.changed`. The version is the idempotency key: the same change again is 409 and changes nothing.',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId, body: PutBody,
      response: { 200: PolicyView, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req) => policies.put(req.caller!.org, req.params.vaultId, req.body, req.caller!.created, req.caller!.entry()));

  app.get('/vaults/:vaultId/chain', {
    schema: {
      summary: 'Read links of the vault\'s intent chain, each with its intent, from a position on',
      description: 'What the API relays to the nodes (docs/policies.md "Windows under any signer subset"), for the customer to audit: each link signed by its key, hash-linked to the one before it. At most `limit` (default 100, at most 1000) links from `from_seq` (default 1).',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId,
      querystring: Type.Object({ from_seq: Type.Optional(QueryInteger({ minimum: 1 })), limit: Type.Optional(QueryInteger({ minimum: 1, maximum: 1000 })) }, { additionalProperties: false }),
      response: {
        200: Type.Object({ data: Type.Array(Type.Object({ seq: Type.Integer(), link: Type.String(), intent: Type.String(), hash: Type.String(), until: Type.Integer(), transaction_id: Type.String() })) }),
        400: ErrorBody, 401: ErrorBody, 404: ErrorBody,
      },
    },
  }, async (req) => {
    await transactions.vaultOf(req.caller!.org, req.params.vaultId);
    const links = await policies.links(req.params.vaultId, req.query.from_seq ?? 1, req.query.limit ?? 100);
    return { data: links.map((l) => ({ seq: l.seq, link: l.link, intent: l.intent, hash: l.hash, until: l.until, transaction_id: l.transaction_id })) };
  });

  app.get('/vaults/:vaultId/approvals', {
    schema: {
      summary: 'The vault\'s transactions awaiting approvals, oldest first, with each quorum\'s progress',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId,
      response: { 200: Type.Object({ data: Type.Array(Transaction) }), 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (req) => {
    await transactions.vaultOf(req.caller!.org, req.params.vaultId);
    const waiting = await TRANSACTIONS.in(transactions.store).byIndex(`vault-state/${req.params.vaultId}/awaiting_approval/`, 1000);
    return { data: waiting.map(transactionView) };
  });

  app.post('/transactions/:txId/approvals', {
    schema: {
      summary: 'Add an approver\'s approval of a transaction awaiting approvals',
      description: 'The signature covers the vault, the policy version the transaction was admitted under and its intent hash (docs/policies.md "Approvals"). Verified here and by every node; once every quorum that applies is met the transaction goes on to signing (`created`). '
        + 'An approver already counted is answered as it is; an unknown approver or a bad signature 403 and nothing changes; a transaction not awaiting approvals, or expired, 409.',
      tags: ['transactions'], security: [{ httpSignature: [] }], params: TxId, body: ApprovalBody,
      response: { 200: Transaction, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req) => transactionView(await transactions.approve(req.caller!.org, req.params.txId, req.body)));

  app.post('/transactions/:txId/rejections', {
    schema: {
      summary: 'Reject a transaction awaiting approvals, as one of the policy\'s approvers',
      description: 'The signature covers the rejection message of the vault, policy version and intent hash (docs/policies.md "Approvals"). The transaction ends `rejected` (`rejected_by_approver`).',
      tags: ['transactions'], security: [{ httpSignature: [] }], params: TxId, body: ApprovalBody,
      response: { 200: Transaction, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req) => transactionView(await transactions.reject(req.caller!.org, req.params.txId, req.body)));
};
