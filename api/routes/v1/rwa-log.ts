// A token's transparency log (docs/platform/transparency-log.md), under /rwa/tokens/{id}: the signed tree
// head, inclusion and consistency proofs, witness registration and submission, and provenance/verify, with
// a workspace bearer key (tokenization.read for reads, .manage to register a witness, .operate to submit
// to the witnesses). Another workspace's token is 404. Both POSTs take an Idempotency-Key.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { base64 } from '@scure/base';
import { bytesToHex } from '@noble/hashes/utils.js';
import { ErrorBody } from '../../errors.ts';
import { actorOf, scopeOf } from '../../auth/bearer-auth.ts';
import type { Platform } from '../../platform.ts';
import { IdempotentRequests, idempotencyKeyOf } from '../../idempotency.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenLogPart } from '../../rwa/log/token-log-setup.ts';
import { Nullable, literals } from './schema-helpers.ts';
import { QueryInteger } from '../../../core/api-schemas/query.ts';

const TAGS = ['tokenization'];
const read: Record<string, string[]>[] = [{ bearer: [] }];
const change: Record<string, string[]>[] = [{ bearer: [] }, { bearer: [], httpSignature: [] }];
const errors = { 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 422: ErrorBody };
const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
const Size = Type.Integer({ minimum: 0, maximum: 2 ** 53 - 1 });
const QuerySize = QueryInteger({ minimum: 0, maximum: 2 ** 53 - 1 });
const Hash = Type.String({ description: 'a SHA-256 hash, base64' });

const TreeHead = Type.Object({
  origin: Type.String({ description: 'the checkpoint\'s origin line, `<API_RWA_LOG_ORIGIN>/rwa/<token id>`' }),
  tree_size: Size,
  root_hash: Hash,
  checkpoint: Type.String({ description: 'the C2SP checkpoint as a signed note: the log key\'s signature, then every stored witness cosignature of this checkpoint' }),
  log_key: Type.String({ description: 'the C2SP verifier key of the log key for this origin (`<origin>+<key id>+<base64 0x01 || Ed25519 key>`)' }),
});
const Inclusion = Type.Object({
  index: Size, tree_size: Size,
  leaf_hash: Type.String({ description: 'SHA-256(0x00 || entry), hex' }),
  entry: Type.String({ description: 'the entry\'s bytes as UTF-8: canonical JSON (docs/platform/transparency-log.md "Entries")' }),
  proof: Type.Array(Hash, { description: 'the RFC 9162 inclusion proof, from the leaf\'s sibling up' }),
  checkpoint: Type.String({ description: 'the signed checkpoint of tree_size, with its stored cosignatures' }),
  tlog_proof: Type.String({ description: 'the same as a C2SP tlog-proof (c2sp.org/tlog-proof@v1), verifiable offline' }),
});
const Consistency = Type.Object({
  first: Size, second: Size,
  proof: Type.Array(Hash, { description: 'the RFC 9162 consistency proof' }),
  first_checkpoint: Type.String(), second_checkpoint: Type.String(),
});
const Witness = Type.Object({
  id: Type.String(), name: Type.String({ description: 'the witness\'s key name' }), vkey: Type.String(), url: Type.String({ description: 'the submission prefix' }),
  cosigned_size: Nullable(Size), created_at: Type.String(),
});
const Submission = Type.Object({
  tree_size: Size,
  checkpoint: Type.String({ description: 'the current checkpoint with every cosignature now stored for it' }),
  results: Type.Array(Type.Object({
    witness_id: Type.String(), name: Type.String(),
    outcome: literals(['cosigned', 'already_cosigned', 'refused', 'unreachable', 'invalid_response'] as const),
    status_code: Nullable(Type.Integer()), old_size: Size, detail: Nullable(Type.String()),
  })),
});
const Report = Type.Object({
  token_id: Type.String(), ok: Type.Boolean(), tree_size: Size,
  checks: Type.Array(Type.Object({
    name: Type.String(), ok: Type.Boolean(), checked: Type.Integer(),
    problems: Type.Array(Type.Object({ index: Nullable(Type.Integer()), kind: Nullable(Type.String()), witness_id: Nullable(Type.String()), detail: Type.String() })),
  })),
});

const DOC = 'docs/platform/transparency-log.md';

export const rwaLogRoutes: FastifyPluginAsyncTypebox<{ platform: Platform; tokenization: Tokenization; tokenLog: TokenLogPart }> = async (app, { platform, tokenization, tokenLog }) => {
  const idempotent = new IdempotentRequests(platform.store, platform.clock, platform.idempotencyWindowMs);
  const { log, witnesses, provenance } = tokenLog;
  const token = (req: FastifyRequest & { params: { id: string } }) => tokenization.tokens.get(scopeOf(req), req.params.id);

  app.get('/rwa/tokens/:id/log/sth', {
    config: { permission: 'tokenization.read' },
    schema: { summary: 'The token log\'s signed tree head: a C2SP checkpoint signed by the log key, with its witness cosignatures', description: `${DOC}#signed-tree-heads`, tags: TAGS, security: read, params: IdParam, response: { 200: TreeHead, ...errors } },
  }, async (req) => {
    const t = await token(req);
    const head = await log.treeHead(t.id);
    return { origin: head.origin, tree_size: head.size, root_hash: base64.encode(head.root), checkpoint: await witnesses.cosigned(t.id, head), log_key: log.vkeyOf(head.origin) };
  });

  app.get('/rwa/tokens/:id/log/proof/inclusion', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'Prove that an entry is in the token\'s log at a tree size (RFC 9162 inclusion proof)', description: `tree_size defaults to the current size; an index not below it is 422 validation_failed. ${DOC}#proofs`,
      tags: TAGS, security: read, params: IdParam, querystring: Type.Object({ index: QuerySize, tree_size: Type.Optional(QuerySize) }, { additionalProperties: false }), response: { 200: Inclusion, ...errors },
    },
  }, async (req) => {
    const t = await token(req);
    const r = await log.inclusion(t.id, req.query.index, req.query.tree_size);
    const checkpoint = await witnesses.cosigned(t.id, r.head);
    const proof = r.proof.map((h) => base64.encode(h));
    return {
      index: req.query.index, tree_size: r.head.size, leaf_hash: bytesToHex(r.leaf), entry: r.entry.entry, proof, checkpoint,
      tlog_proof: `c2sp.org/tlog-proof@v1\nindex ${req.query.index}\n${proof.map((p) => `${p}\n`).join('')}\n${checkpoint}`,
    };
  });

  app.get('/rwa/tokens/:id/log/proof/consistency', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'Prove that the token\'s log at one size extends it at a smaller size (RFC 9162 consistency proof)', description: `second defaults to the current size; first above second is 422 validation_failed. ${DOC}#proofs`,
      tags: TAGS, security: read, params: IdParam, querystring: Type.Object({ first: QuerySize, second: Type.Optional(QuerySize) }, { additionalProperties: false }), response: { 200: Consistency, ...errors },
    },
  }, async (req) => {
    const t = await token(req);
    const r = await log.consistency(t.id, req.query.first, req.query.second);
    return { first: r.first.size, second: r.second.size, proof: r.proof.map((h) => base64.encode(h)), first_checkpoint: r.first.note, second_checkpoint: await witnesses.cosigned(t.id, r.second) };
  });

  app.post('/rwa/tokens/:id/witnesses', {
    config: { permission: 'tokenization.manage' },
    schema: {
      summary: 'Register a witness of the token\'s log: its C2SP cosignature verifier key and its submission prefix',
      description: `vkey: \`<name>+<key id>+<base64 0x04 || Ed25519 key>\` (c2sp-tlog-cosignature); url: the prefix \`<url>/add-checkpoint\` is called under (https to a public address). A key or name already registered is 409 witness_already_registered. Idempotency-Key accepted. ${DOC}#witnesses`,
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ vkey: Type.String({ minLength: 1, maxLength: 400 }), url: Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s]+$' }) }, { additionalProperties: false }),
      response: { 201: Witness, ...errors },
    },
  }, async (req, reply) => {
    const t = await token(req);
    const scope = scopeOf(req);
    const view = await idempotent.run(scope.workspace, `rwa_witness:${t.id}`, idempotencyKeyOf(req), req.body, async () => witnesses.view(await witnesses.register(scope, actorOf(req), t.id, req.body)));
    return reply.code(201).send(view);
  });

  app.post('/rwa/tokens/:id/log/witness', {
    config: { permission: 'tokenization.operate' },
    schema: {
      summary: 'Submit the token log\'s current checkpoint to its witnesses (C2SP tlog-witness add-checkpoint) and keep their cosignatures',
      description: `Each witness gets \`old <size it last cosigned>\`, the consistency proof from there, and the checkpoint; a cosignature is kept only when it verifies under the witness's registered key. The answer reports each witness (cosigned, already_cosigned, refused with its status, unreachable). witness_id limits it to one. Idempotency-Key accepted. ${DOC}#witnesses`,
      tags: TAGS, security: change, params: IdParam,
      body: Type.Object({ witness_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })) }, { additionalProperties: false }),
      response: { 200: Submission, ...errors },
    },
  }, async (req) => {
    const t = await token(req);
    const scope = scopeOf(req);
    return idempotent.run(scope.workspace, `rwa_log_witness:${t.id}`, idempotencyKeyOf(req), req.body, async () => {
      const { head, results } = await witnesses.submit(t.id, req.body.witness_id);
      return { tree_size: head.size, checkpoint: await witnesses.cosigned(t.id, head), results };
    });
  });

  app.get('/rwa/tokens/:id/provenance/verify', {
    config: { permission: 'tokenization.read' },
    schema: {
      summary: 'Check the token\'s whole history end to end and report each check by name',
      description: `The log's checks (checkpoint signatures, every entry re-hashed to the signed tree, witness cosignatures, consistency of the cosigned checkpoints) and those the other parts register; a failure names the entry (index and kind) or the witness. ${DOC}#provenance`,
      tags: TAGS, security: read, params: IdParam, response: { 200: Report, ...errors },
    },
  }, async (req) => {
    const t = await token(req);
    const r = await provenance.verify(scopeOf(req), t.id);
    return { ...r, checks: r.checks.map((c) => ({ ...c, problems: c.problems.map((p) => ({ index: p.index ?? null, kind: p.kind ?? null, witness_id: p.witness_id ?? null, detail: p.detail })) })) };
  });
};
