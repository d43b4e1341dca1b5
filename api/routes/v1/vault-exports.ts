// Key export (docs/export.md): POST /v1/vaults/{vaultId}/exports, GET /v1/vaults/{vaultId}/exports/{exportId},
// POST /v1/vaults/{vaultId}/exports/{exportId}/approvals, POST /v1/vaults/{vaultId}/exports/{exportId}/collect.
// The API relays: the request goes to the nodes in the trust log, approvals and ciphertexts pass through.
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { ErrorBody } from '../../errors.ts';
import type { VaultExportRecord } from '../../vaults/records.ts';
import type { VaultExports } from '../../vaults/vault-exports.ts';

const Hex = (bytes?: number) => Type.String(bytes ? { pattern: `^[0-9a-f]{${bytes * 2}}$` } : { pattern: '^(?:[0-9a-f]{2})+$', maxLength: 2048 });
const Ids = Type.Object({ vaultId: Type.String({ minLength: 1, maxLength: 64 }), exportId: Type.String({ pattern: '^[A-Za-z0-9_-]{16,64}$' }) });
const VaultId = Type.Object({ vaultId: Type.String({ minLength: 1, maxLength: 64 }) });

const ExportRequestBody = Type.Object({
  request: Hex(),
  signature: Hex(64),
}, { additionalProperties: false, description: 'The canonical export request (docs/export.md "The request") and the Ed25519 signature of the API key that signs this HTTP request over it, lower-case hex.' });

const ApprovalBody = Type.Object({ approver_key: Hex(32), signature: Hex(64) }, { additionalProperties: false });

const Nullable = <T extends ReturnType<typeof Type.Integer>>(t: T) => Type.Union([t, Type.Null()]);
const VaultExport = Type.Object({
  id: Type.String({ description: 'The request id the customer signed.' }),
  vault_id: Type.String(),
  state: Type.Union([Type.Literal('waiting'), Type.Literal('sealed')]),
  request: Type.String(), request_sha256: Type.String({ description: 'What approvers sign, under the approval domain (docs/export.md).' }),
  recipient_key: Type.String(), not_before: Type.Integer(),
  approvals: Type.Array(Type.Object({ approver_key: Type.String(), signature: Type.String(), created_at: Type.String() })),
  nodes: Type.Array(Type.Object({
    node_id: Type.String(), status: Type.Union([Type.Literal('waiting'), Type.Literal('sealed'), Type.Literal('failed')]),
    ready_at: Nullable(Type.Integer({ description: 'Unix seconds at which this node seals, on its own clock.' })), code: Type.Union([Type.String(), Type.Null()]),
  })),
  shares: Type.Array(Type.Object({ node_id: Type.String(), party: Type.Integer(), enc: Type.String(), ciphertext: Type.String() }), { description: 'HPKE-sealed shares; only the recipient key opens them.' }),
  threshold: Nullable(Type.Integer()),
  created_at: Type.String(), updated_at: Type.String(),
});

const view = (r: VaultExportRecord) => ({
  id: r.id, vault_id: r.vault_id, state: r.state, request: r.request, request_sha256: r.request_sha256, recipient_key: r.recipient_key, not_before: r.not_before,
  approvals: r.approvals, nodes: r.nodes, shares: r.shares, threshold: r.threshold, created_at: r.created_at, updated_at: r.updated_at,
});

export const vaultExportRoutes: FastifyPluginAsyncTypebox<{ exports: VaultExports }> = async (app, { exports }) => {
  app.post('/vaults/:vaultId/exports', {
    schema: {
      summary: 'Request the export of a vault\'s key to a recipient key the customer holds',
      description: 'Each signer node seals its own share to the request\'s recipient key once the approvals its governance asks for are given and its delay has passed on its own clock (docs/export.md). '
        + 'The request id inside the signed request is the idempotency key: the same request again answers the export as it is (header `idempotent-replayed: true`); other bytes under the id are 409.',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: VaultId, body: ExportRequestBody,
      response: { 202: VaultExport, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody },
    },
  }, async (req, reply) => {
    const { record, replayed } = await exports.request(req.caller!.org, req.caller!.keyId, req.params.vaultId, req.body, req.caller!.entry());
    if (replayed) reply.header('idempotent-replayed', 'true');
    return reply.code(202).send(view(record));
  });

  app.get('/vaults/:vaultId/exports/:exportId', {
    schema: { summary: 'Read an export: approvals, each node\'s answer, and the sealed shares', tags: ['vaults'], security: [{ httpSignature: [] }], params: Ids, response: { 200: VaultExport, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody } },
  }, async (req) => view(await exports.get(req.caller!.org, req.params.vaultId, req.params.exportId)));

  app.post('/vaults/:vaultId/exports/:exportId/approvals', {
    schema: {
      summary: 'Add an approver\'s signature over the export request\'s hash',
      description: 'Verified here and again by every node against the approvers its governance names. An approver already counted is answered as it is.',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: Ids, body: ApprovalBody,
      response: { 200: VaultExport, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody },
    },
  }, async (req) => view(await exports.approve(req.caller!.org, req.params.vaultId, req.params.exportId, req.body)));

  app.post('/vaults/:vaultId/exports/:exportId/collect', {
    schema: {
      summary: 'Ask every node of the vault for its answer: when it seals, or its sealed share',
      description: 'Idempotent: a node that sealed seals again to the same recipient key. The export is `sealed` once as many nodes as the key\'s threshold sealed.',
      tags: ['vaults'], security: [{ httpSignature: [] }], params: Ids,
      response: { 200: VaultExport, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 503: ErrorBody },
    },
  }, async (req) => view(await exports.collect(req.caller!.org, req.params.vaultId, req.params.exportId)));
};
