// Integration gateways of a workspace (docs/platform/gateways.md): create, list, read, patch, status,
// TLS pins, history; the rail directory the funding service asks which rail a workspace's transfers go to;
// and the callbacks gateways send. Every change writes the record, its history entry and its audit entry
// in one batch; a status change also emits `integration_gateway.status_changed`.
import { ed25519 } from '@noble/curves/ed25519.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { verifyContentDigest } from '../../core/http/content-digest.ts';
import { SignatureError, verifyRequest } from '../../core/http/http-signature.ts';
import type { Op, RecordRepository } from '../store/record-repository.ts';
import { newId } from '../store/ids.ts';
import { pageOf, type CursorCodec, type PageResult } from '../store/pagination.ts';
import type { Actor, AuditLog } from '../tenancy/audit-log.ts';
import type { Scope } from '../tenancy/scope.ts';
import type { DeliveryEngine, Envelope } from '../webhooks/delivery-engine.ts';
import type { DestinationPolicy } from '../webhooks/destination-policy.ts';
import { validateUrl } from '../webhooks/webhook-endpoints.ts';
import type { ReplayGuard } from '../auth/replay-guard.ts';
import type { PaymentRail, RailTransfer } from '../rails/payment-rail.ts';
import type { GatewayReadiness } from '../tenancy/gateway-readiness.ts';
import type { WorkspaceRecord } from '../tenancy/tenancy-service.ts';
import { GatewayCallError, type GatewayClient } from './gateway-client.ts';
import { GatewayRail } from './gateway-rail.ts';
import { MalformedAnswer, SUITE_VERSION, parseCallback, toRailTransfer } from './gateway-protocol.ts';
import { runConformance } from './conformance-suite.ts';
import { GATEWAY_CONFORMANCE_CALLBACKS, GATEWAY_CONFORMANCE_RUNS, GATEWAY_EVENTS, GATEWAY_FAILURE_MARKS, INTEGRATION_GATEWAYS } from './collections.ts';
import type { ConformanceRunRecord, GatewayEventRecord, GatewayEventType, GatewayRecord, GatewayStatus } from './gateway-records.ts';

export const GATEWAY_ID = /^gwy_[0-9a-f]{26}$/;
/** References of the conformance suite's transfers; never a funding or off-ramp request's. */
export const CONFORMANCE_REFERENCE = /^cnf_[0-9a-f]{8,40}_[a-z0-9_]{1,40}$/;
const PIN = /^[A-Za-z0-9+/]{43}=$/;
/** A call failure of one category is written to the history at most once a minute. */
const FAILURE_REPEAT_MS = 60_000;

/** A transfer whose status changed, and the rail that said so. */
export type DirectoryListener = (transfer: RailTransfer, rail: string) => Promise<void>;

/** What the funding service asks: the rail of a workspace's new transfers, and a rail by name for the ones in flight. */
export interface RailDirectory {
  /** The workspace's active gateway, as a rail; undefined when it has none. Throws when its gateway cannot serve. */
  forWorkspace(scope: Scope & { environment: string }): Promise<PaymentRail | undefined>;
  /** The gateway rail of that name, for its in-flight transfers; undefined when it is disabled or unknown. */
  named(name: string): Promise<PaymentRail | undefined>;
  onSettlement(listener: DirectoryListener): void;
}

export interface GatewayServiceOptions {
  store: RecordRepository;
  cursors: CursorCodec;
  audit: AuditLog;
  deliveries: DeliveryEngine;
  client: GatewayClient;
  policy: DestinationPolicy;
  replayGuard: ReplayGuard;
  /** The origin gateways reach the service at (API_PUBLIC_URL): callbacks go to `<origin>/v1/gateway-callbacks/<id>`. */
  callbackOrigin: () => string;
  redemptionAddresses?: Readonly<Record<string, string>>;
  /** How long a conformance run waits for its callbacks (API_GATEWAY_CALLBACK_WAIT_MS). */
  callbackWaitMs: number;
  clock: () => number;
}

export interface CreateGatewayInput { name: string; base_url: string; callback_public_key: string; currencies?: string[] | undefined }
export interface PatchGatewayInput { name?: string | undefined; base_url?: string | undefined }

const invalid = (m: string) => new CustodyError('validation_failed', m);
const SYSTEM: Envelope['actor'] = { type: 'system', id: 'integration_gateways' };

export function validateName(name: string): void {
  if (name.length < 1 || name.length > 120 || /[\r\n<>]/.test(name)) throw invalid('name: 1 to 120 characters, no newlines or angle brackets');
}

export function validateCallbackKey(hex: string): void {
  if (!/^[0-9a-f]{64}$/.test(hex)) throw invalid('callback_public_key: an Ed25519 public key, 64 lower-case hex digits');
  try {
    ed25519.Point.fromHex(hex).assertValidity();
  } catch {
    throw invalid('callback_public_key: not a point of Ed25519');
  }
}

export class GatewayService implements RailDirectory, GatewayReadiness {
  private readonly listeners: DirectoryListener[] = [];
  private redemption: Readonly<Record<string, string>>;

  constructor(private readonly o: GatewayServiceOptions) {
    this.redemption = o.redemptionAddresses ?? {};
  }

  /** Closes the kept connections to gateways (the server's shutdown). */
  close(): Promise<void> {
    return this.o.client.close();
  }

  /** Where holders send stablecoin to redeem it: the issuer's, whichever rail pays the fiat (set by the funding setup). */
  setRedemptionAddresses(addresses: Readonly<Record<string, string>>): void {
    this.redemption = addresses;
  }

  private iso(ms = this.o.clock()): string {
    return new Date(ms).toISOString();
  }

  callbackUrl(id: string): string {
    return `${this.o.callbackOrigin().replace(/\/+$/, '')}/v1/gateway-callbacks/${id}`;
  }

  /** Whether the gateway takes new transfers now, and why not. */
  serving(g: GatewayRecord): { serving: boolean; reason: string | null } {
    if (g.status !== 'active') return { serving: false, reason: `the gateway is ${g.status}` };
    if (g.environment === 'production' && !this.conformant(g)) return { serving: false, reason: `no passing run of conformance suite ${SUITE_VERSION} against the current base_url` };
    return { serving: true, reason: null };
  }

  private conformant(g: GatewayRecord): boolean {
    const c = g.conformance;
    return !!c && c.passed && c.suite_version === SUITE_VERSION && c.base_url === g.base_url;
  }

  view(g: GatewayRecord) {
    const { v: _v, tenant: _t, workspace: _w, ...rest } = g;
    const s = this.serving(g);
    return {
      ...rest, serving: s.serving, not_serving_reason: s.reason, suite_version: SUITE_VERSION, callback_url: this.callbackUrl(g.id),
      service_key: { keyid: this.o.client.key.keyId, algorithm: 'ed25519' as const, public_key: Buffer.from(this.o.client.key.publicKey).toString('hex') },
    };
  }

  private ix(g: GatewayRecord): string[] {
    return [`${g.workspace}\x00${g.id}`, ...(g.status === 'active' ? [`active\x00${g.workspace}\x00${g.id}`] : [])];
  }

  private putOps(before: GatewayRecord | undefined, after: GatewayRecord): Op[] {
    const keep = this.ix(after);
    return [INTEGRATION_GATEWAYS.putOp(after.id, after, { index: keep, unindex: before ? this.ix(before).filter((i) => !keep.includes(i)) : [] })];
  }

  eventOp(g: GatewayRecord, type: GatewayEventType, actor: GatewayEventRecord['actor'], data: GatewayEventRecord['data']): Op {
    const e: GatewayEventRecord = { v: 1, id: newId('gev', this.o.clock()), gateway_id: g.id, tenant: g.tenant, workspace: g.workspace, type, data, actor, created_at: this.iso() };
    return GATEWAY_EVENTS.putOp(e.id, e, { index: [`${g.id}\x00${e.id}`] });
  }

  private checkBaseUrl(url: string): void {
    validateUrl(url);
    const u = new URL(url);
    if (u.protocol !== 'https:') throw invalid('base_url: a gateway is reached over https only');
    if (u.search || u.hash) throw invalid('base_url: no query or fragment; the protocol\'s paths are appended to it');
    const refusal = this.o.policy.checkUrl(url);
    if (refusal) throw invalid(`base_url: ${refusal}`);
  }

  async create(scope: Scope & { environment: string }, actor: Actor, input: CreateGatewayInput): Promise<GatewayRecord> {
    validateName(input.name);
    this.checkBaseUrl(input.base_url);
    validateCallbackKey(input.callback_public_key);
    const currencies = input.currencies ?? ['USD'];
    if (new Set(currencies).size !== currencies.length) throw invalid('currencies: must not repeat');
    const now = this.iso();
    const g: GatewayRecord = {
      v: 1, id: newId('gwy', this.o.clock()), tenant: scope.tenant, workspace: scope.workspace, environment: scope.environment === 'production' ? 'production' : 'sandbox',
      name: input.name, base_url: input.base_url, currencies, callback_public_key: input.callback_public_key,
      // Created not serving: it is made active by POST /status, in production after a passing conformance run.
      status: 'suspended', pins: null, conformance: null, created_at: now, updated_at: now,
    };
    await this.o.store.batch([
      ...this.putOps(undefined, g),
      this.eventOp(g, 'created', actor, { status: g.status }),
      this.o.audit.op(scope, actor, 'integration_gateway.create', g.id, null, this.view(g)),
    ]);
    return g;
  }

  async get(scope: Scope, id: string): Promise<GatewayRecord> {
    const g = GATEWAY_ID.test(id) ? await INTEGRATION_GATEWAYS.in(this.o.store).get(id) : undefined;
    if (!g || g.workspace !== scope.workspace || g.tenant !== scope.tenant) throw new CustodyError('not_found', `no integration gateway ${id}`);
    return g;
  }

  async list(scope: Scope, cursor: string | undefined, limit: number): Promise<PageResult<ReturnType<GatewayService['view']>>> {
    const after = this.o.cursors.decode(cursor, 'integration_gateways', scope.workspace, {});
    const items = await INTEGRATION_GATEWAYS.in(this.o.store).byIndexAfter(`${scope.workspace}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, items, limit, 'integration_gateways', scope.workspace, {});
    return { ...page, data: page.data.map((g) => this.view(g)) };
  }

  /** Changes are made under the gateway's lock, from the stored record. */
  private locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return this.o.store.exclusive(`integration-gateway:${id}`, fn);
  }

  async patch(scope: Scope, actor: Actor, id: string, input: PatchGatewayInput): Promise<GatewayRecord> {
    await this.get(scope, id);
    if (input.name !== undefined) validateName(input.name);
    if (input.base_url !== undefined) this.checkBaseUrl(input.base_url);
    return this.locked(id, async () => {
      const before = await this.get(scope, id);
      const changed = (input.name !== undefined && input.name !== before.name) || (input.base_url !== undefined && input.base_url !== before.base_url);
      if (!changed) return before;
      if (input.base_url !== undefined && input.base_url !== before.base_url && before.status === 'active') {
        throw new CustodyError('conflict', 'base_url changes only while the gateway is not active: suspend it, change it, run the conformance suite again, then activate it');
      }
      const after: GatewayRecord = { ...before, ...(input.name !== undefined ? { name: input.name } : {}), ...(input.base_url !== undefined ? { base_url: input.base_url } : {}), updated_at: this.iso() };
      await this.o.store.batch([
        ...this.putOps(before, after),
        this.eventOp(after, 'updated', actor, { name_changed: after.name !== before.name, base_url_changed: after.base_url !== before.base_url }),
        this.o.audit.op(scope, actor, 'integration_gateway.update', id, this.view(before), this.view(after)),
      ]);
      return after;
    });
  }

  async setStatus(scope: Scope, actor: Actor, id: string, status: GatewayStatus): Promise<GatewayRecord> {
    await this.get(scope, id);
    return this.locked(id, async () => {
      const before = await this.get(scope, id);
      if (before.status === status) return before;
      if (status === 'active') {
        if (before.environment === 'production' && !this.conformant(before)) {
          throw new CustodyError('conformance_required', `a production gateway is activated only after a passing run of conformance suite ${SUITE_VERSION} against its current base_url: POST /v1/integration-gateways/${id}/conformance`);
        }
        // One rail per workspace: the active gateway is where every new transfer goes.
        return this.o.store.exclusive(`integration-gateway-active:${scope.workspace}`, async () => {
          const other = (await INTEGRATION_GATEWAYS.in(this.o.store).byIndex(`active\x00${scope.workspace}\x00`, 2)).find((g) => g.id !== id);
          if (other) throw new CustodyError('conflict', `gateway ${other.id} is active in this workspace; suspend or disable it first (one active gateway per workspace)`);
          return this.writeStatus(scope, actor, before, status);
        });
      }
      return this.writeStatus(scope, actor, before, status);
    });
  }

  private async writeStatus(scope: Scope, actor: Actor, before: GatewayRecord, status: GatewayStatus): Promise<GatewayRecord> {
    const after: GatewayRecord = { ...before, status, updated_at: this.iso() };
    await this.o.deliveries.emitAll(scope, [{ type: 'integration_gateway.status_changed', resource: { type: 'integration_gateway', id: after.id }, actor, data: { gateway_id: after.id, status } }], [
      ...this.putOps(before, after),
      this.eventOp(after, 'status_changed', actor, { from: before.status, to: status }),
      this.o.audit.op(scope, actor, 'integration_gateway.status', after.id, this.view(before), this.view(after)),
    ]);
    return after;
  }

  async pin(scope: Scope, actor: Actor, id: string, input: { current: string; next?: string | null | undefined }): Promise<GatewayRecord> {
    await this.get(scope, id);
    if (!PIN.test(input.current)) throw invalid('current: the base64 SHA-256 of the certificate\'s SubjectPublicKeyInfo (44 characters)');
    const next = input.next ?? null;
    if (next !== null && !PIN.test(next)) throw invalid('next: the base64 SHA-256 of the certificate\'s SubjectPublicKeyInfo (44 characters)');
    if (next === input.current) throw invalid('next: must differ from current');
    return this.locked(id, async () => {
      const before = await this.get(scope, id);
      if (before.pins && before.pins.current === input.current && before.pins.next === next) return before;
      const after: GatewayRecord = { ...before, pins: { current: input.current, next, pinned_at: this.iso() }, updated_at: this.iso() };
      await this.o.store.batch([
        ...this.putOps(before, after),
        this.eventOp(after, 'pin_changed', actor, { current: input.current, next, previous_current: before.pins?.current ?? null }),
        this.o.audit.op(scope, actor, 'integration_gateway.pin_cert', id, this.view(before), this.view(after)),
      ]);
      return after;
    });
  }

  /**
   * Runs the conformance suite against the gateway's base_url in sandbox mode, then stores the run and
   * makes it the gateway's latest, in one batch. One run per gateway at a time; not for a disabled one.
   */
  async conformance(scope: Scope, actor: Actor, id: string): Promise<ConformanceRunRecord> {
    const first = await this.get(scope, id);
    if (first.status === 'disabled') throw new CustodyError('conflict', 'a disabled gateway is not called: make it suspended or active to run the suite');
    return this.o.store.exclusive(`integration-gateway-conformance:${id}`, async () => {
      const gw = await this.get(scope, id);
      const started = this.iso();
      const checks = await runConformance({ client: this.o.client, store: this.o.store, callbackUrl: this.callbackUrl(gw.id), callbackWaitMs: this.o.callbackWaitMs }, gw);
      return this.locked(id, async () => {
        const before = await this.get(scope, id);
        const run: ConformanceRunRecord = {
          v: 1, id: newId('gcr', this.o.clock()), gateway_id: gw.id, tenant: gw.tenant, workspace: gw.workspace, suite_version: SUITE_VERSION,
          base_url: gw.base_url, passed: checks.every((c) => c.passed), checks, started_at: started, finished_at: this.iso(),
        };
        const after: GatewayRecord = { ...before, conformance: { run_id: run.id, suite_version: run.suite_version, base_url: run.base_url, passed: run.passed, finished_at: run.finished_at }, updated_at: this.iso() };
        await this.o.store.batch([
          GATEWAY_CONFORMANCE_RUNS.putOp(run.id, run, { index: [`${gw.id}\x00${run.id}`] }),
          ...this.putOps(before, after),
          this.eventOp(after, 'conformance_run', actor, { run_id: run.id, suite_version: run.suite_version, passed: run.passed, failed_checks: checks.filter((c) => !c.passed).map((c) => c.name).join(' ') || null }),
          this.o.audit.op(scope, actor, 'integration_gateway.conformance', id, null, { run_id: run.id, passed: run.passed }),
        ]);
        return run;
      });
    });
  }

  async events(scope: Scope, id: string, cursor: string | undefined, limit: number): Promise<PageResult<Omit<GatewayEventRecord, 'v' | 'tenant' | 'workspace'>>> {
    const g = await this.get(scope, id);
    const after = this.o.cursors.decode(cursor, `integration_gateway_events/${g.id}`, scope.workspace, {});
    const items = await GATEWAY_EVENTS.in(this.o.store).byIndexAfter(`${g.id}\x00`, after, limit + 1);
    const page = pageOf(this.o.cursors, items, limit, `integration_gateway_events/${g.id}`, scope.workspace, {});
    return { ...page, data: page.data.map(({ v: _v, tenant: _t, workspace: _w, ...e }) => e) };
  }

  /** Writes a call failure to the gateway's history, a category at most once a minute. */
  async recordFailure(g: GatewayRecord, err: GatewayCallError, type: 'call_failed' | 'callback_refused' = 'call_failed'): Promise<void> {
    const category = type === 'callback_refused' ? `callback_${err.category}` : err.category;
    const now = this.o.clock();
    const mark = await GATEWAY_FAILURE_MARKS.in(this.o.store).get(g.id);
    if (mark && mark.category === category && now - mark.at < FAILURE_REPEAT_MS) return;
    await this.o.store.batch([
      GATEWAY_FAILURE_MARKS.putOp(g.id, { v: 1, category, at: now }),
      this.eventOp(g, type, SYSTEM, { category: err.category, code: err.code, detail: err.message, status_code: err.status }),
    ]);
  }

  // ── The rail directory ─────────────────────────────────────────────────────────────────────────────

  private rail(g: GatewayRecord): GatewayRail {
    return new GatewayRail({
      gateway: g, client: this.o.client, store: this.o.store, callbackUrl: this.callbackUrl(g.id), redemptionAddresses: this.redemption,
      onFailure: (gw, err) => this.recordFailure(gw, err),
    });
  }

  async forWorkspace(scope: Scope & { environment: string }): Promise<PaymentRail | undefined> {
    const [g] = await INTEGRATION_GATEWAYS.in(this.o.store).byIndex(`active\x00${scope.workspace}\x00`, 1);
    if (!g || g.tenant !== scope.tenant) return undefined;
    const s = this.serving(g);
    if (!s.serving) throw new CustodyError('funding_unavailable', `the workspace's integration gateway ${g.id} does not serve: ${s.reason}`);
    return this.rail(g);
  }

  /** The onboarding status's gateway item (docs/platform/tenancy.md "Onboarding"): the workspace's active gateway, and whether it serves. */
  async check(workspace: WorkspaceRecord): Promise<{ configured: boolean; detail: string }> {
    const [g] = await INTEGRATION_GATEWAYS.in(this.o.store).byIndex(`active\x00${workspace.id}\x00`, 1);
    if (!g || g.tenant !== workspace.tenant) return { configured: false, detail: 'no active integration gateway: create one, pin its certificate, run conformance and activate it' };
    const s = this.serving(g);
    return s.serving ? { configured: true, detail: `integration gateway ${g.id} is active and serves` } : { configured: false, detail: `integration gateway ${g.id} does not serve: ${s.reason}` };
  }

  async named(name: string): Promise<PaymentRail | undefined> {
    const g = GATEWAY_ID.test(name) ? await INTEGRATION_GATEWAYS.in(this.o.store).get(name) : undefined;
    // Disabled: its in-flight transfers are held as they are, neither polled nor resubmitted.
    if (!g || g.status === 'disabled') return undefined;
    return this.rail(g);
  }

  onSettlement(listener: DirectoryListener): void {
    this.listeners.push(listener);
  }

  // ── Callbacks ──────────────────────────────────────────────────────────────────────────────────────

  /**
   * A callback the gateway POSTed (docs/platform/gateways.md "Callbacks"): signed by the key registered on
   * the gateway (keyid its id), the body's Content-Digest checked, the nonce used once; its transfer must
   * be one the gateway answered for, with the same amount. Then the listeners (the funding service) act on
   * it; a listener's failure is 503, for the gateway to call back again.
   */
  async receiveCallback(id: string, req: { method: string; url: string; headers: Record<string, string | string[] | undefined>; body: Buffer }, nowSeconds: number): Promise<void> {
    const g = GATEWAY_ID.test(id) ? await INTEGRATION_GATEWAYS.in(this.o.store).get(id) : undefined;
    if (!g) throw new CustodyError('not_found', `no integration gateway ${id}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(req.body.toString('utf8'));
    } catch {
      parsed = undefined;
    }
    const conformanceRef = (() => {
      const ref = (parsed as { transfer?: { reference?: unknown } } | undefined)?.transfer?.reference;
      return typeof ref === 'string' && CONFORMANCE_REFERENCE.test(ref) ? ref : undefined;
    })();
    /** A conformance callback is kept only where a run awaits it (its placeholder exists). */
    const awaitedKey = conformanceRef && (await GATEWAY_CONFORMANCE_CALLBACKS.in(this.o.store).get(`${g.id}/${conformanceRef}`)) ? `${g.id}/${conformanceRef}` : undefined;
    const refuse = async (message: string): Promise<never> => {
      if (awaitedKey) {
        await GATEWAY_CONFORMANCE_CALLBACKS.in(this.o.store).put(awaitedKey, { v: 1, refused: message, transfer: null, received_at: this.iso() });
      } else if (!conformanceRef) {
        await this.recordFailure(g, new GatewayCallError('gateway_error', `callback refused: ${message}`), 'callback_refused');
      }
      throw new CustodyError('unauthorized', `callback refused: ${message}`);
    };
    if (g.status === 'disabled') {
      await this.recordFailure(g, new GatewayCallError('gateway_error', 'callback refused: the gateway is disabled'), 'callback_refused');
      throw new CustodyError('gateway_disabled', `gateway ${g.id} is disabled: its callbacks are refused until it is active or suspended`);
    }
    const digest = req.headers['content-digest'];
    if (typeof digest !== 'string' || !verifyContentDigest(digest, req.body)) return refuse('Content-Digest is missing or does not match the body');
    const key = Buffer.from(g.callback_public_key, 'hex');
    try {
      const v = verifyRequest({ method: req.method, url: req.url, headers: req.headers }, (kid) => (kid === g.id ? key : undefined), nowSeconds, {
        requiredParams: ['created', 'expires', 'nonce', 'keyid'], requiredComponents: ['@method', '@target-uri', 'content-digest'], maxValiditySeconds: 300, skewSeconds: 30,
      });
      if (!(await this.o.replayGuard.claim(`gateway:${g.id}`, v.nonce!, v.expires!, nowSeconds))) return refuse('replayed: this nonce was already used');
    } catch (err) {
      if (err instanceof SignatureError) return refuse(err.message);
      throw err;
    }
    let body;
    try {
      body = parseCallback(parsed);
    } catch (err) {
      if (err instanceof MalformedAnswer) {
        await this.recordFailure(g, new GatewayCallError('malformed_answer', `malformed callback: ${err.message}`), 'callback_refused');
        throw new CustodyError('invalid_request', `malformed callback: ${err.message}`);
      }
      throw err;
    }
    if (conformanceRef) {
      if (awaitedKey) await GATEWAY_CONFORMANCE_CALLBACKS.in(this.o.store).put(awaitedKey, { v: 1, refused: null, transfer: { ...body.transfer }, received_at: this.iso() });
      return;
    }
    if (!(await GatewayRail.matches(this.o.store, g.id, body.transfer))) {
      await this.recordFailure(g, new GatewayCallError('malformed_answer', 'callback refused: it names a transfer this gateway was not given, or another amount'), 'callback_refused');
      throw new CustodyError('validation_failed', 'the callback names a transfer this gateway was not given (reference, id, direction, amount or currency differs)');
    }
    const t = toRailTransfer(body.transfer);
    for (const l of this.listeners) {
      try {
        await l(t, g.id);
      } catch {
        throw new CustodyError('unavailable', 'the callback could not be applied now; call back again');
      }
    }
  }
}
