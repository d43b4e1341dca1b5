// A sample customer BFF (docs/platform/bff.md "The sample BFF") for a Hosted Auth application, on the
// SDK's BFF helper: BffSessions keeps each member session behind an opaque __Host- cookie and refreshes
// it, PlatformClient forwards the member's calls to the API with the BFF's bearer key, the application's
// publishable key and the server-held session id. It serves a tiny page and the browser package's bundle,
// and answers the package's routes (api/sdk/browser/bff-routes.ts) only for calls of its own pages
// (checkBffRequest). Contacts and money movement are not forwarded: they stay server operations.
//
// The browser never sees a session id, refresh credential, key or one-time result; it names no member or
// holder: the BFF takes both from the session, and passes on only the fields each operation needs.
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  BffError, BffSessions, CustodyApiError, MemberAuthClient, MemoryBffStore, PlatformClient, SdkError,
  checkBffRequest, clearSessionCookie, readSessionReference, readTransactionId, type BffStore,
} from '../../api/sdk/index.ts';
import { BFF_BASE, BFF_ROUTES } from '../../api/sdk/browser/bff-routes.ts';

export interface SampleBffOptions {
  /** The API's origin, e.g. https://api.example.com. */
  apiUrl: string;
  /** The Hosted application's BFF principal (its `bff_key_id`): a `member_auth` key. */
  apiKey: string;
  publishableKey: string;
  /** This BFF's public origin (the application's registered origin), e.g. https://app.example.com. */
  origin: string;
  /** The application's `result_callback_url`: a URL of `origin`. */
  redirectUri: string;
  /** A key with `account_holder.manage`, for the member's avatar (the avatar routes are staff operations); without it the avatar routes answer 501. */
  holderApiKey?: string;
  /** Offer the sandbox application's demo persona (POST /bff/sign-in/sandbox-demo): sandbox keys only. */
  sandboxDemo?: boolean;
  /** 32 bytes; sessions and sign-ins are sealed under it. */
  storeKey: Uint8Array;
  /** Default: one process's MemoryBffStore. Several instances share a PostgresBffStore. */
  store?: BffStore;
  /** The browser package's bundle (deploy/sdk/build-browser.mjs `bundleBrowserPackage`). */
  browserBundle: string;
  fetch?: typeof fetch;
  now?: () => number;
}

const page = (name: string) => readFileSync(new URL(`./page/${name}`, import.meta.url), 'utf8');
// Scripts only from this origin, no inline script, no framing: the page holds the member's view.
const PAGE_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/gif', 'image/webp'];
const MAX_AVATAR = 2 * 1024 * 1024;
const AC_TTL_MS = 600_000;

/** A stored value sealed under the store key, with its store key as associated data (as BffSessions seals). */
function sealer(key: Uint8Array) {
  const b64u = (b: Uint8Array) => Buffer.from(b).toString('base64url');
  return {
    seal(name: string, value: unknown): string {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(name));
      const ct = Buffer.concat([c.update(JSON.stringify(value), 'utf8'), c.final()]);
      return `v1.${b64u(iv)}.${b64u(ct)}.${b64u(c.getAuthTag())}`;
    },
    open<T>(name: string, blob: string | undefined): T | undefined {
      if (blob === undefined) return undefined;
      const [v, iv, ct, tag] = blob.split('.');
      if (v !== 'v1' || !iv || ct === undefined || !tag) return undefined;
      const d = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url')).setAAD(Buffer.from(name)).setAuthTag(Buffer.from(tag, 'base64url'));
      return JSON.parse(Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8')) as T;
    },
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest('base64url');

export async function buildSampleBff(o: SampleBffOptions): Promise<FastifyInstance> {
  const origin = new URL(o.origin).origin;
  const redirect = new URL(o.redirectUri);
  if (redirect.origin !== origin) throw new SdkError('invalid_config', 'redirectUri must be a URL of the BFF\'s origin');
  const store = o.store ?? new MemoryBffStore(o.now);
  const fetchOpt = o.fetch ? { fetch: o.fetch } : {};
  const client = new MemberAuthClient({ baseUrl: o.apiUrl, apiKey: o.apiKey, publishableKey: o.publishableKey, ...fetchOpt });
  const bff = new BffSessions({ client, store, storeKey: o.storeKey, hosted: { redirectUri: redirect.href }, ...(o.now ? { now: o.now } : {}) });
  // The member's calls: the BFF's key, the publishable key, and per call the session id.
  const api = new PlatformClient({ baseUrl: o.apiUrl, apiKey: o.apiKey, headers: { 'x-svc-publishable-key': o.publishableKey }, ...fetchOpt });
  const staff = o.holderApiKey ? new PlatformClient({ baseUrl: o.apiUrl, apiKey: o.holderApiKey, ...fetchOpt }) : undefined;
  const sealed = sealer(o.storeKey);
  const fetchFn = o.fetch ?? fetch;

  const app = Fastify({ logger: false, bodyLimit: MAX_AVATAR + 1024 });
  app.addContentTypeParser(IMAGE_TYPES, { parseAs: 'buffer', bodyLimit: MAX_AVATAR }, (_req, body, done) => done(null, body));

  const bffPath = (route: keyof typeof BFF_ROUTES) => BFF_BASE + BFF_ROUTES[route];
  const reference = (req: FastifyRequest) => {
    const ref = readSessionReference(req.headers.cookie);
    if (!ref) throw new BffError('signed_out', 'no session cookie: sign in');
    return ref;
  };

  /** Runs `fn` with the member's session id; a session the API no longer takes is refreshed once. */
  async function asMember<T>(req: FastifyRequest, fn: (headers: { 'x-member-session-id': string }) => Promise<T>): Promise<T> {
    const ref = reference(req);
    const s = await bff.session(ref);
    try {
      return await fn({ 'x-member-session-id': s.sessionId });
    } catch (err) {
      if (!(err instanceof CustodyApiError && err.code === 'member_session_invalid')) throw err;
      const fresh = await bff.refreshAfter(ref, s.sessionId);
      return fn({ 'x-member-session-id': fresh.sessionId });
    }
  }

  /** The member's holder id, from the session: the browser never names it. */
  const holderId = (req: FastifyRequest) => asMember(req, async (headers) => ((await api.getAccountHoldersSelfVerification({ headers })) as { account_holder_id: string }).account_holder_id);
  const needStaff = () => {
    if (!staff) throw Object.assign(new Error('the avatar routes need holderApiKey'), { statusCode: 501, code: 'avatar_not_configured' });
    return staff;
  };

  app.setErrorHandler((err: unknown, _req, reply) => {
    if (err instanceof BffError) {
      if (err.code === 'signed_out') return reply.code(401).header('set-cookie', clearSessionCookie()).send({ code: 'signed_out', error: err.message });
      if (err.code === 'csrf_refused') return reply.code(403).send({ code: err.code, error: err.message });
      return reply.code(err.code === 'lock_timeout' ? 503 : 400).send({ code: err.code, error: err.message });
    }
    if (err instanceof CustodyApiError) return reply.code(err.status).send({ code: err.code, error: err.message });
    if (err instanceof SdkError) return reply.code(502).send({ code: 'api_unavailable', error: 'the API did not answer' });
    const e = err as { statusCode?: number; code?: string; message?: string };
    if (e.statusCode && e.statusCode < 500) return reply.code(e.statusCode).send({ code: e.code === 'avatar_not_configured' ? e.code : 'invalid_request', error: e.message });
    if (e.statusCode === 501) return reply.code(501).send({ code: e.code, error: e.message });
    return reply.code(500).send({ code: 'internal', error: 'internal error' });
  });

  // Every member route but the sign-in navigation: the package's CSRF header, from this origin only; never
  // cached. The avatar image and the export file are loaded by the page's elements, which send no header.
  const resource = new RegExp(`^${BFF_BASE}(${BFF_ROUTES.avatarImage}|/data-exports/[^/]+/file)$`);
  app.addHook('onRequest', async (req, reply) => {
    const path = req.url.split('?')[0]!;
    if (!path.startsWith(`${BFF_BASE}/`) || path === bffPath('signIn')) return;
    reply.header('cache-control', 'no-store');
    const isResource = req.method === 'GET' && resource.test(path);
    if (isResource) reply.header('cross-origin-resource-policy', 'same-origin');
    checkBffRequest(req, { origin, resource: isResource });
  });

  // ---- The page and the bundle ---------------------------------------------------------------------
  const html = page('index.html');
  const script = page('app.js');
  app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_CSP).header('x-content-type-options', 'nosniff').send(html));
  app.get('/app.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').send(script));
  app.get('/assets/bff-browser.js', async (_req, reply) => reply.type('text/javascript; charset=utf-8').header('x-content-type-options', 'nosniff').send(o.browserBundle));

  // ---- Session launch and status -------------------------------------------------------------------
  app.get(bffPath('signIn'), async (_req, reply) => {
    const begun = await bff.beginHostedSignIn();
    return reply.code(303).header('set-cookie', begun.flowCookie).header('location', begun.authorizationUrl).send();
  });

  app.get(redirect.pathname, async (req, reply) => {
    const q = req.query as Record<string, string | undefined>;
    const callbackUrl = req.url;
    if (typeof q.code === 'string' && q.code.startsWith('acr_')) {
      // An Account Center visit ends here: its handoff, found by its state, must be this member's.
      const ref = reference(req);
      const name = `sample:ac:${digest(q.state ?? '')}`;
      const pending = sealed.open<{ verifier: string; ref: string }>(name, await store.get(name));
      if (!pending || pending.ref !== digest(ref)) return reply.code(400).send({ code: 'transaction_unknown', error: 'no Account Center visit of this browser has that state' });
      await store.delete(name);
      const summary = await asMember(req, (headers) => api.postAccountCenterHandoffsExchange({ headers, body: { code: q.code, code_verifier: pending.verifier, return_url: redirect.href } }));
      const resultName = `sample:ac-result:${digest(ref)}`;
      await store.set(resultName, sealed.seal(resultName, summary), 3_600_000);
      return back(reply, []);
    }
    const tx = readTransactionId(req.headers.cookie);
    if (!tx) return reply.code(400).send({ code: 'transaction_unknown', error: 'no sign-in of this browser is under way' });
    const done = await bff.completeSignIn(tx, { callbackUrl });
    return back(reply, [done.sessionCookie, done.clearFlowCookie]);
  });

  // The callback is the end of a cross-site redirect chain, along which a SameSite=Strict cookie is not
  // sent: a same-origin navigation from a page of ours (a meta refresh, no script) goes home with it.
  function back(reply: FastifyReply, cookies: string[]) {
    if (cookies.length) reply.header('set-cookie', cookies);
    return reply.type('text/html; charset=utf-8').header('content-security-policy', PAGE_CSP).header('cache-control', 'no-store')
      .send('<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0;url=/"><title>Signed in</title><p><a href="/">Continue</a></p>');
  }

  app.post(bffPath('signInSandboxDemo'), async (_req, reply) => {
    if (!o.sandboxDemo) return reply.code(404).send({ code: 'not_found', error: 'this BFF offers no sandbox demo' });
    const done = await bff.signInSandboxDemo();
    return reply.header('set-cookie', done.sessionCookie).send({ signed_in: true });
  });

  const signedOut = { signed_in: false, sandbox_demo: o.sandboxDemo === true };
  app.get(bffPath('session'), async (req) => {
    const ref = readSessionReference(req.headers.cookie);
    if (!ref) return signedOut;
    try {
      const ctx = await bff.context(ref);
      return { signed_in: true, expires_at: ctx.session.expires_at, application_kind: ctx.application.kind };
    } catch (err) {
      if (err instanceof BffError && err.code === 'signed_out') return signedOut;
      throw err;
    }
  });

  app.post(bffPath('signOut'), async (req, reply) => {
    const everywhere = (req.body as { everywhere?: unknown } | undefined)?.everywhere === true;
    const ref = readSessionReference(req.headers.cookie);
    if (!ref) return reply.header('set-cookie', clearSessionCookie()).send({ signed_out: true, revoked_sessions: 0 });
    const out = await bff.signOut(ref, everywhere ? 'all' : 'session');
    return reply.header('set-cookie', out.clearCookie).send({ signed_out: true, revoked_sessions: out.revoked_sessions });
  });

  // ---- Enrolment, profile, avatar ------------------------------------------------------------------
  type Verification = { account_holder_id: string; status: string; verification_status: string };
  const verificationOrNull = (req: FastifyRequest) => asMember(req, (headers) => api.getAccountHoldersSelfVerification({ headers }) as Promise<Verification>)
    .catch((err: unknown) => {
      if (err instanceof CustodyApiError && err.code === 'account_holder_not_linked') return null;
      throw err;
    });

  app.get(bffPath('enrolment'), async (req) => {
    const v = await verificationOrNull(req);
    if (!v) return { account_holder_linked: false, verification_status: null, consents_current: null, wallet_status: null, next: 'link_account_holder' };
    const consents = await asMember(req, (headers) => api.getAccountHoldersSelfConsents({ headers })) as { all_current: boolean };
    const wallets = await asMember(req, (headers) => api.getAccountHoldersSelfWalletReadiness({ headers })) as { status: string };
    const next = !consents.all_current ? 'accept_policies' : wallets.status === 'ready' ? 'done' : 'provision_wallet';
    return { account_holder_linked: true, verification_status: v.verification_status, consents_current: consents.all_current, wallet_status: wallets.status, next };
  });

  app.get(bffPath('profile'), async (req) => {
    const ctx = await bff.context(reference(req));
    const v = await verificationOrNull(req);
    return {
      member_id: ctx.member.id, application_kind: ctx.application.kind, authenticated_at: ctx.session.authenticated_at, amr: ctx.amr, acr: ctx.acr,
      restricted_until: ctx.restricted_until ?? null,
      account_holder: v ? { id: v.account_holder_id, status: v.status, verification_status: v.verification_status } : null,
    };
  });

  type AvatarAnswer = { content_type: string; size: number; confirmed_at: string; url?: string };
  const avatarView = (a: AvatarAnswer) => ({ content_type: a.content_type, size: a.size, confirmed_at: a.confirmed_at, url: bffPath('avatarImage') });

  app.get(bffPath('avatar'), async (req) => avatarView(await needStaff().getAccountHoldersByIdAvatar({ id: await holderId(req) }) as AvatarAnswer));

  app.get(bffPath('avatarImage'), async (req, reply) => {
    const a = await needStaff().getAccountHoldersByIdAvatar({ id: await holderId(req) }) as AvatarAnswer & { url: string };
    // The presigned URL stays here: the browser gets the bytes from its own origin.
    const r = await fetchFn(a.url);
    if (!r.ok) return reply.code(502).send({ code: 'api_unavailable', error: 'the avatar could not be read' });
    return reply.type(a.content_type).header('x-content-type-options', 'nosniff').header('cache-control', 'private, no-store').send(Buffer.from(await r.arrayBuffer()));
  });

  app.put(bffPath('avatar'), async (req, reply) => {
    const type = String(req.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (!IMAGE_TYPES.includes(type) || !Buffer.isBuffer(req.body)) return reply.code(415).send({ code: 'invalid_request', error: 'the avatar is a PNG, JPEG, GIF or WebP image' });
    const bytes = req.body;
    const s = needStaff();
    const id = await holderId(req);
    const grant = await s.postAccountHoldersByIdAvatarUploadUrl({ id, body: { content_type: type, content_length: bytes.length } }) as { upload_url: string; object_key: string };
    const put = await fetchFn(grant.upload_url, { method: 'PUT', headers: { 'content-type': type }, body: bytes });
    if (!put.ok) return reply.code(502).send({ code: 'api_unavailable', error: 'the upload was refused' });
    return avatarView(await s.postAccountHoldersByIdAvatarConfirm({ id, body: { object_key: grant.object_key } }) as AvatarAnswer);
  });

  app.delete(bffPath('avatar'), async (req, reply) => {
    await needStaff().deleteAccountHoldersByIdAvatar({ id: await holderId(req) });
    return reply.code(204).send();
  });

  // ---- Balances and history ------------------------------------------------------------------------
  const pageQuery = (req: FastifyRequest, keys: string[]) => {
    const q = req.query as Record<string, string | undefined>;
    return Object.fromEntries(keys.filter((k) => q[k] !== undefined).map((k) => [k, k === 'limit' ? Number(q[k]) : q[k]]));
  };
  app.get(bffPath('balance'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfBalance({ headers })));
  app.get(bffPath('transactions'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfTransactions({ headers, query: pageQuery(req, ['kind', 'cursor', 'limit']) })));
  app.get(bffPath('bankBalance'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfBankBalance({ headers })));
  app.get(bffPath('bankTransactions'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfBankTransactions({ headers, query: pageQuery(req, ['cursor', 'limit']) })));

  // ---- Consents, verification, data exports --------------------------------------------------------
  app.get(bffPath('consents'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfConsents({ headers })));
  app.post(bffPath('consents'), async (req, reply) => {
    const accepted = (req.body as { accepted?: unknown } | undefined)?.accepted;
    return reply.code(201).send(await asMember(req, (headers) => api.postAccountHoldersSelfConsents({ headers, body: { accepted } })));
  });
  app.get(bffPath('verification'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfVerification({ headers })));

  type Export = { id: string; download: { url: string; expires_at: string } | null };
  const exportView = (e: Export) => ({ ...e, download: e.download ? { url: bffPath('dataExportFile').replace(':id', e.id), expires_at: e.download.expires_at } : null });
  const idempotencyKey = (req: FastifyRequest) => {
    const k = req.headers['idempotency-key'];
    return typeof k === 'string' && /^[\x21-\x7e]{1,255}$/.test(k) ? { idempotencyKey: k } : {};
  };
  app.post(bffPath('dataExports'), async (req, reply) => {
    const e = await asMember(req, (headers) => api.postAccountHoldersSelfDataExports({ headers, body: { format: 'json' }, ...idempotencyKey(req) })) as Export;
    return reply.code(202).send(exportView(e));
  });
  app.get(bffPath('dataExport'), async (req) => exportView(await asMember(req, (headers) => api.getAccountHoldersSelfDataExportsById({ headers, id: (req.params as { id: string }).id })) as Export));
  app.get(bffPath('dataExportFile'), async (req, reply) => {
    const e = await asMember(req, (headers) => api.getAccountHoldersSelfDataExportsById({ headers, id: (req.params as { id: string }).id })) as Export;
    if (!e.download) return reply.code(409).send({ code: 'data_export_not_ready', error: 'the export has no file (yet, or any more)' });
    const r = await fetchFn(e.download.url);
    if (!r.ok) return reply.code(502).send({ code: 'api_unavailable', error: 'the export could not be read' });
    return reply.type('application/json').header('content-disposition', `attachment; filename="${e.id}.json"`).send(Buffer.from(await r.arrayBuffer()));
  });

  // ---- Self wallets --------------------------------------------------------------------------------
  app.get(bffPath('wallets'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfWallets({ headers, query: pageQuery(req, ['cursor', 'limit']) })));
  app.get(bffPath('walletReadiness'), (req) => asMember(req, (headers) => api.getAccountHoldersSelfWalletReadiness({ headers })));
  app.post(bffPath('walletProvision'), async (req) => {
    const b = (req.body ?? {}) as { vault_id?: unknown; chains?: unknown };
    return asMember(req, (headers) => api.postAccountHoldersSelfWalletProvision({ headers, body: { vault_id: b.vault_id, chains: b.chains }, ...idempotencyKey(req) }));
  });

  // ---- Account Center ------------------------------------------------------------------------------
  app.post(bffPath('accountCenter'), async (req) => {
    const ref = reference(req);
    const state = randomBytes(32).toString('base64url');
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const h = await asMember(req, (headers) => api.postAccountCenterHandoffs({ headers, body: { return_url: redirect.href, state, code_challenge: challenge, code_challenge_method: 'S256' } })) as { handoff_url: string };
    const name = `sample:ac:${digest(state)}`;
    await store.set(name, sealed.seal(name, { verifier, ref: digest(ref) }), AC_TTL_MS);
    return { url: h.handoff_url };
  });
  app.get(bffPath('accountCenter'), async (req) => {
    const name = `sample:ac-result:${digest(reference(req))}`;
    return { result: sealed.open(name, await store.get(name)) ?? null };
  });

  return app;
}
