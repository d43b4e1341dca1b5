// Witnesses of a token's log (docs/platform/transparency-log.md "Witnesses"): registered per token with
// their C2SP verifier key (Ed25519 cosignature, type 0x04) and submission prefix. The service is the
// client of C2SP tlog-witness: it POSTs `<prefix>/add-checkpoint` with `old <size>`, the consistency
// proof from the size the witness last cosigned, and the current checkpoint; it keeps the cosignature
// only once it verifies under the registered key. Calls go out through the webhooks' policy-checked
// client (API_WEBHOOK_ALLOWED_DESTINATIONS), so a registered URL cannot reach inside the network.
import { base64 } from '@scure/base';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { RecordRepository } from '../../store/record-repository.ts';
import type { AuditLog } from '../../tenancy/audit-log.ts';
import type { OutboundHttp } from '../../webhooks/outbound-http.ts';
import { newId } from '../../store/ids.ts';
import type { Actor } from '../../tenancy/audit-log.ts';
import type { RwaScope } from '../seams.ts';
import { LOG_COSIGNATURES, LOG_WITNESSES, cosignatureId, cosignatureIndex, witnessIndex } from './collections.ts';
import { verifyCosignature } from './checkpoint.ts';
import type { CosignatureRecord, WitnessRecord } from './records.ts';
import { NoteError, parseNote, parseSignatureLine, parseVkey, SIG_COSIGNATURE_ED25519, type NoteVerifier } from './signed-note.ts';
import type { StoredTokenLog, TreeHead } from './stored-token-log.ts';

/** Witnesses a token's log may have; each submission calls every one of them. */
export const MAX_WITNESSES = 16;

export type SubmissionOutcome = 'cosigned' | 'already_cosigned' | 'refused' | 'unreachable' | 'invalid_response';

export interface SubmissionResult {
  witness_id: string;
  name: string;
  outcome: SubmissionOutcome;
  /** The witness's HTTP status; null when it did not answer. */
  status_code: number | null;
  /** The size the witness cosigned before this submission (`old`), and what it said, briefly. */
  old_size: number;
  detail: string | null;
}

export interface WitnessView {
  id: string;
  name: string;
  vkey: string;
  url: string;
  /** The largest tree size this witness has cosigned; null before its first cosignature. */
  cosigned_size: number | null;
  created_at: string;
}

export class WitnessService {
  constructor(private readonly o: { store: RecordRepository; log: StoredTokenLog; http: OutboundHttp; audit: AuditLog; clock: () => number }) {}

  async register(scope: RwaScope, actor: Actor, tokenId: string, input: { vkey: string; url: string }): Promise<WitnessRecord> {
    let v: NoteVerifier;
    try {
      v = parseVkey(input.vkey);
    } catch (err) {
      if (err instanceof NoteError) throw new CustodyError('validation_failed', `vkey: ${err.message}`);
      throw err;
    }
    if (v.type !== SIG_COSIGNATURE_ED25519) throw new CustodyError('validation_failed', 'vkey: a witness key is an Ed25519 cosignature key (type byte 0x04, c2sp-tlog-cosignature)');
    if (this.o.http.policy.checkUrl(input.url) !== null) throw new CustodyError('validation_failed', 'url: the destination is not allowed (https to a public address; see API_WEBHOOK_ALLOWED_DESTINATIONS)');
    return this.o.store.exclusive(`rwa-log-witnesses:${tokenId}`, async () => {
      const existing = await this.list(tokenId);
      if (existing.some((w) => w.vkey === input.vkey || w.name === v.name)) throw new CustodyError('witness_already_registered', `a witness named ${v.name} or with this key is already registered for ${tokenId}`);
      if (existing.length >= MAX_WITNESSES) throw new CustodyError('validation_failed', `a token's log has at most ${MAX_WITNESSES} witnesses`);
      const r: WitnessRecord = {
        v: 1, id: newId('wit', this.o.clock()), token: tokenId, tenant: scope.tenant, workspace: scope.workspace, name: v.name, vkey: input.vkey,
        url: input.url.replace(/\/+$/, ''), created_at: new Date(this.o.clock()).toISOString(),
      };
      await this.o.store.batch([
        LOG_WITNESSES.putOp(r.id, r, { index: [witnessIndex(tokenId, r.id)] }),
        this.o.audit.op(scope, actor, 'tokenization.rwa.witness.register', r.id, null, { token: tokenId, name: r.name, vkey: r.vkey, url: r.url }),
      ]);
      return r;
    });
  }

  list(tokenId: string): Promise<WitnessRecord[]> {
    return LOG_WITNESSES.in(this.o.store).byIndex(`${tokenId}\x00`);
  }

  async view(w: WitnessRecord): Promise<WitnessView> {
    const latest = await this.latest(w.token, w.id);
    return { id: w.id, name: w.name, vkey: w.vkey, url: w.url, cosigned_size: latest?.size ?? null, created_at: w.created_at };
  }

  /** The latest cosignature a witness gave the token's log. */
  async latest(tokenId: string, witnessId: string): Promise<CosignatureRecord | undefined> {
    const [e] = await LOG_COSIGNATURES.in(this.o.store).byIndexEntries(`${tokenId}\x00${witnessId}\x00`, undefined, 1, true);
    return e?.value;
  }

  /** Every stored cosignature of the token's log, by witness then size. */
  async cosignatures(tokenId: string): Promise<CosignatureRecord[]> {
    const out: CosignatureRecord[] = [];
    for await (const { value } of LOG_COSIGNATURES.in(this.o.store).entries({ after: `${tokenId}/`, lt: `${tokenId}0` })) out.push(value);
    return out;
  }

  /** The checkpoint note of `head` with every stored cosignature of that exact checkpoint appended. */
  async cosigned(tokenId: string, head: TreeHead): Promise<string> {
    const text = parseNote(head.note).text;
    const lines = (await this.cosignatures(tokenId)).filter((c) => c.size === head.size && c.checkpoint_text === text).map((c) => c.line);
    return head.note + lines.join('');
  }

  /** Submits the current checkpoint to the token's witnesses (or the one named), one request each. */
  async submit(tokenId: string, witnessId?: string): Promise<{ head: TreeHead; results: SubmissionResult[] }> {
    const all = await this.list(tokenId);
    const targets = witnessId === undefined ? all : all.filter((w) => w.id === witnessId);
    if (witnessId !== undefined && targets.length === 0) throw new CustodyError('not_found', `no witness ${witnessId} for ${tokenId}`);
    const head = await this.o.log.treeHead(tokenId);
    const results = await Promise.all(targets.map((w) => this.o.store.exclusive(`rwa-log-witness:${w.id}`, () => this.submitTo(w, head))));
    return { head, results };
  }

  private async submitTo(w: WitnessRecord, head: TreeHead): Promise<SubmissionResult> {
    const latest = await this.latest(w.token, w.id);
    let old = latest?.size ?? 0;
    const text = parseNote(head.note).text;
    const result = (outcome: SubmissionOutcome, status: number | null, detail: string | null): SubmissionResult => ({ witness_id: w.id, name: w.name, outcome, status_code: status, old_size: old, detail });
    if (latest && latest.size === head.size && latest.checkpoint_text === text) return result('already_cosigned', null, null);
    if (head.size === 0) return result('refused', null, 'the log is empty: there is nothing to cosign yet');
    // A 409 names the size the witness holds (a cosignature whose answer was lost): one retry from there.
    for (let attempt = 0; attempt < 2; attempt++) {
      if (old > head.size) return result('refused', 409, `the witness has cosigned ${old} leaves, more than this log's ${head.size}`);
      const proof = old === 0 ? [] : (await this.o.log.consistency(w.token, old, head.size)).proof;
      const body = `old ${old}\n${proof.map((h) => `${base64.encode(h)}\n`).join('')}\n${head.note}`;
      const res = await this.o.http.post(`${w.url}/add-checkpoint`, { body, headers: { 'content-type': 'text/plain; charset=utf-8' } });
      if (res.status_code === null) return result('unreachable', null, res.error);
      if (res.status_code === 409 && attempt === 0 && /^(0|[1-9][0-9]{0,15})\n$/.test(res.response_body ?? '')) {
        old = Number(res.response_body);
        continue;
      }
      if (res.status_code !== 200) return result('refused', res.status_code, (res.response_body ?? '').slice(0, 200) || null);
      return this.keep(w, head, text, res.response_body ?? '', result);
    }
    return result('refused', 409, 'the witness\'s size changed twice');
  }

  /** Keeps the first cosignature by the registered key that verifies over the checkpoint. */
  private async keep(w: WitnessRecord, head: TreeHead, text: string, body: string, result: (o: SubmissionOutcome, s: number | null, d: string | null) => SubmissionResult): Promise<SubmissionResult> {
    const v = parseVkey(w.vkey);
    for (const line of body.split(/(?<=\n)/).filter((l) => l.startsWith('\u2014'))) {
      let sig;
      try {
        sig = parseSignatureLine(line);
      } catch {
        continue;
      }
      const timestamp = verifyCosignature(text, sig, v);
      if (timestamp === null) continue;
      const r: CosignatureRecord = { v: 1, token: w.token, witness_id: w.id, size: head.size, checkpoint_text: text, line, timestamp: Number(timestamp), created_at: new Date(this.o.clock()).toISOString() };
      await LOG_COSIGNATURES.in(this.o.store).put(cosignatureId(w.token, w.id, head.size), r, [cosignatureIndex(w.token, w.id, head.size)]);
      return result('cosigned', 200, null);
    }
    return result('invalid_response', 200, 'no cosignature in the answer verifies under the registered key');
  }
}
