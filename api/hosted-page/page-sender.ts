// What both hosted pages (the Hosted Auth page and the Account Center) answer with: the tenant's theme for
// the page's surface, an HTML step under the page's security headers (hosted-page.ts), and the refusal of a
// client past the per-address limit (page-rate-limit.ts).
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../platform.ts';
import { resolveTheme, type Theme } from '../branding/branding-service.ts';
import type { AddressLimit } from '../rate-limits/rate-limits.ts';
import { logoOrigin, newNonce, pageHeaders, renderPage, runsScript, type PageStep } from './hosted-page.ts';

type Scoped = { tenant: string; workspace: string };
export type SendableStep = PageStep & { csrf?: string; notice?: string | undefined };

/**
 * `themeOf` resolves a record's tenant theme for a surface (the default theme without one); `send`
 * answers a step branded for `surface`, its forms allowed to `formOrigins` of the record.
 */
export function pageSender<R extends Scoped>(platform: Platform, surface: 'hosted_auth' | 'account_center', formOrigins: (r: R) => string) {
  async function themeOf(r: R | undefined, s: typeof surface | 'email'): Promise<Theme> {
    if (!r) return resolveTheme({}, null);
    return (await platform.branding.view({ tenant: r.tenant, workspace: r.workspace })).surfaces[s]?.resolved ?? resolveTheme({}, null);
  }
  async function send(reply: FastifyReply, r: R | undefined, status: number, step: SendableStep) {
    const theme = await themeOf(r, surface);
    const nonce = newNonce();
    return reply.code(status).headers(pageHeaders(nonce, r ? formOrigins(r) : undefined, logoOrigin(theme), runsScript(step))).send(renderPage(theme, nonce, step));
  }
  /**
   * Before anything is read: a client past its limit gets 429 with Retry-After and an unbranded page
   * (no store read); undefined when the request may go on.
   */
  async function tooManyAttempts(req: FastifyRequest, reply: FastifyReply, rateLimit: AddressLimit | undefined) {
    const retryAfter = rateLimit ? await req.server.takeAddressLimit(req, reply, rateLimit) : undefined;
    if (retryAfter === undefined) return undefined;
    return send(reply, undefined, 429, { step: 'error', code: 'rate_limited', title: 'Too many attempts', message: `Too many attempts from your network. Wait ${retryAfter} seconds, then try again.` });
  }
  return { themeOf, send, tooManyAttempts };
}

/**
 * The form's text fields (the pages' parser gives each name at most once); a body of another type (JSON)
 * keeps only its string fields, so a step sees text or nothing and refuses the rest as it would a blank.
 */
export function formOf(req: FastifyRequest): Record<string, string> {
  const b = req.body;
  if (!b || typeof b !== 'object' || Array.isArray(b)) return {};
  return Object.fromEntries(Object.entries(b as Record<string, unknown>).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].length <= 1024));
}

/** What a page's form step answers (hosted-authorizations.ts StepOutcome, account-center.ts AccountCenterOutcome). */
export type FormOutcome<Code, Notice> =
  | { kind: 'page'; notice?: string; send?: Code }
  | { kind: 'codes'; codes: string[] }
  | { kind: 'callback'; location: string; notify?: Notice };

export interface FormPosts<Code, Notice> {
  app: FastifyInstance;
  /** The page's path segment under /v1: `hosted-auth` or `account-center`. */
  page: string;
  schema: (summary: string) => object;
  rateLimit: AddressLimit | undefined;
  tooManyAttempts: (req: FastifyRequest, reply: FastifyReply, rateLimit: AddressLimit | undefined) => Promise<unknown>;
  cookieOf: (req: FastifyRequest, id: string) => string | undefined;
  refusal: (reply: FastifyReply, id: string, err: unknown) => Promise<unknown>;
  /** Sends an email code without holding the request. */
  dispatch: (req: FastifyRequest, code: Code) => void;
  notify?: (req: FastifyRequest, notice: Notice) => void;
  /** Renders a set of recovery codes, shown in this answer only. */
  codes: (reply: FastifyReply, id: string, cookie: string | undefined, codes: string[]) => Promise<unknown>;
}

/**
 * Registers one form step of a page: the per-address limit first, then the step, and its answer:
 * 303 to the callback (no referrer) or back to the page with a notice (POST-redirect-GET), the recovery
 * codes in this answer, or the refusal as a page.
 */
export function formPoster<Code, Notice = never>(o: FormPosts<Code, Notice>) {
  return (path: string, summary: string, run: (id: string, cookie: string | undefined, form: Record<string, string>) => Promise<FormOutcome<Code, Notice>>) => {
    o.app.post<{ Params: { id: string } }>(`/${o.page}/:id/${path}`, { config: { public: true }, schema: o.schema(summary) }, async (req, reply) => {
      const { id } = req.params;
      const limited = await o.tooManyAttempts(req, reply, o.rateLimit);
      if (limited) return limited;
      try {
        const cookie = o.cookieOf(req, id);
        const out = await run(id, cookie, formOf(req));
        if (out.kind === 'callback') {
          if (out.notify !== undefined) o.notify?.(req, out.notify);
          return await reply.code(303).headers({ location: out.location, 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).send();
        }
        if (out.kind === 'codes') return await o.codes(reply, id, cookie, out.codes);
        if (out.send !== undefined) o.dispatch(req, out.send);
        return await reply.code(303).headers({ location: `/v1/${o.page}/${id}${out.notice ? `?n=${out.notice}` : ''}`, 'cache-control': 'no-store' }).send();
      } catch (err) {
        return o.refusal(reply, id, err);
      }
    });
  };
}
