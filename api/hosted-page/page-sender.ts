// What both hosted pages (the Hosted Auth page and the Account Center) answer with: the tenant's theme for
// the page's surface, an HTML step under the page's security headers (hosted-page.ts), and the refusal of a
// client past the per-address limit (page-rate-limit.ts).
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Platform } from '../platform.ts';
import { resolveTheme, type Theme } from '../branding/branding-service.ts';
import type { PageRateLimit } from './page-rate-limit.ts';
import { logoOrigin, newNonce, pageHeaders, renderPage, type PageStep } from './hosted-page.ts';

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
    return reply.code(status).headers(pageHeaders(nonce, r ? formOrigins(r) : undefined, logoOrigin(theme))).send(renderPage(theme, nonce, step));
  }
  /**
   * Before anything is read: a client past its limit gets 429 with Retry-After and an unbranded page
   * (no store read); undefined when the request may go on.
   */
  async function tooManyAttempts(req: FastifyRequest, reply: FastifyReply, rateLimit: PageRateLimit | undefined) {
    const retryAfter = rateLimit?.take(req.ip);
    if (retryAfter === undefined) return undefined;
    reply.header('retry-after', String(retryAfter));
    return send(reply, undefined, 429, { step: 'error', code: 'rate_limited', title: 'Too many attempts', message: `Too many attempts from your network. Wait ${retryAfter} seconds, then try again.` });
  }
  return { themeOf, send, tooManyAttempts };
}
