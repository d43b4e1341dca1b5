// The Hosted Auth page (docs/platform/hosted-auth.md "The page"): public routes under /v1/hosted-auth/,
// reached by the member's browser through the authorization_url the BFF got. No credential but the
// authorization id and, from the first GET on, the `__Host-` flow cookie (SameSite=Lax) that binds the
// ceremony to that browser; every form carries a CSRF token derived from the cookie. POST-redirect-GET:
// a step answers 303 to the page again, or, once the member is authenticated, to the application's
// registered callback with the one-time result and the BFF's state.
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../../core/errors/http-status.ts';
import type { Platform } from '../platform.ts';
import type { Mailer } from '../email/mailer.ts';
import { maskEmail } from '../email/mailer.ts';
import type { HostedAuthorizations, CodeToSend, RecoveryNotice } from '../member-auth/hosted-authorizations.ts';
import { totpProvisioning } from '../member-auth/hosted-factors.ts';
import type { HostedAuthorizationRecord } from '../member-auth/hosted-records.ts';
import type { AddressLimit } from '../rate-limits/rate-limits.ts';
import { esc, noticeText } from './hosted-page.ts';
import { formPoster, pageSender } from './page-sender.ts';

export interface HostedPageOptions {
  platform: Platform;
  authorizations: HostedAuthorizations;
  mailer: Mailer | undefined;
  /** The per-client-address limit on form POSTs, shared by both pages (page-rate-limit.ts). */
  rateLimit?: AddressLimit | undefined;
}

const FORM_LIMIT = 4096;

/** Where a form of this authorization may lead: the application's origin and its callback's (form-action covers the redirect). */
function formOrigins(a: HostedAuthorizationRecord): string {
  const callback = new URL(a.redirect_uri).origin;
  return callback === a.origin ? a.origin : `${a.origin} ${callback}`;
}
const cookieName = (id: string) => `__Host-hauth-${id.slice(4)}`;

/** The flow cookie `name` carries, when well-formed (43 base64url characters). */
export function namedCookieOf(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (typeof header !== 'string') return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) {
      const v = part.slice(eq + 1).trim();
      return /^[A-Za-z0-9_-]{43}$/.test(v) ? v : undefined;
    }
  }
  return undefined;
}
const cookieOf = (req: FastifyRequest, id: string) => namedCookieOf(req, cookieName(id));

/** The pages' form parser: each field at most once (a repeated name makes the form empty), FORM_LIMIT bytes. */
export function useFormParser(app: FastifyInstance): void {
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_LIMIT }, (_req, body, done) => {
    const out: Record<string, string> = Object.create(null) as Record<string, string>;
    for (const [k, v] of new URLSearchParams(body as string)) {
      if (Object.hasOwn(out, k)) return done(null, {});
      out[k] = v;
    }
    done(null, out);
  });
}

export const hostedPageRoutes: FastifyPluginAsync<HostedPageOptions> = async (app, { platform, authorizations, mailer, rateLimit }) => {
  useFormParser(app);

  const { themeOf, send, tooManyAttempts } = pageSender<HostedAuthorizationRecord>(platform, 'hosted_auth', formOrigins);

  /** A refusal as a page: the registered code's status, the code in data-error-code, the message. */
  async function refusal(reply: FastifyReply, id: string, err: unknown) {
    if (!(err instanceof CustodyError)) throw err;
    const a = await authorizations.find(id).catch(() => undefined);
    return send(reply, a, httpStatusOfCode(err.code), { step: 'error', code: err.code, message: err.message });
  }

  /**
   * Sends a code without holding the request: the answer takes as long whether or not a code goes out
   * (no enumeration by timing), and a failure is logged by its category only (no address, no code).
   */
  function dispatch(req: FastifyRequest, c: CodeToSend): void {
    if (!mailer) return;
    void (async () => {
      const theme = await themeOf(c.authorization, 'email');
      const brand = String(theme.from_name ?? theme.brand_name ?? 'Sign in');
      const subject = `${String(theme.brand_name ?? 'Your')} sign-in code`;
      const intro = typeof theme.intro_override === 'string' ? theme.intro_override : 'Use this code to finish signing in:';
      await mailer.send({
        to: c.to, fromName: brand, subject,
        text: `${intro}\n\n${c.code}\n\nIt works for 10 minutes. If you did not try to sign in, ignore this email.\n`,
        html: `<p>${esc(intro)}</p><p style="font-size:24px;font-weight:600;letter-spacing:4px;color:${esc(String(theme.email_text_color ?? '#111827'))}">${c.code}</p><p>It works for 10 minutes. If you did not try to sign in, ignore this email.</p>`,
      });
    })().catch((err: unknown) => req.log.warn({ to: maskEmail(c.to), category: (err as { code?: string }).code ?? 'send_failed' }, 'hosted auth code email not sent'));
  }

  /** The security notification of a finished recovery, sent as the codes are (no address or secret logged). */
  function notify(req: FastifyRequest, n: RecoveryNotice): void {
    if (!mailer) return;
    void (async () => {
      const theme = await themeOf(n.authorization, 'email');
      const brand = String(theme.from_name ?? theme.brand_name ?? 'Security');
      const text = 'Your authenticator app and recovery codes were replaced using a saved recovery code and an email code. '
        + `Every session that was signed in has ended. Actions that need your approval are blocked until ${n.restrictedUntil} and your next sign-in after it.\n\n`
        + 'If this was not you, contact the application\'s support now.\n';
      await mailer.send({ to: n.to, fromName: brand, subject: `${String(theme.brand_name ?? 'Your')} sign-in factors were replaced`, text, html: `<p>${esc(text)}</p>` });
    })().catch((err: unknown) => req.log.warn({ to: maskEmail(n.to), category: (err as { code?: string }).code ?? 'send_failed' }, 'hosted auth security notice not sent'));
  }

  const SCHEMA = (summary: string) => ({ summary, tags: ['member auth'], security: [], description: 'The Hosted Auth page (HTML, form posts); reached by the member\'s browser through authorization_url. docs/platform/hosted-auth.md' });

  app.get<{ Params: { id: string }; Querystring: { n?: string } }>('/hosted-auth/:id', { config: { public: true }, schema: SCHEMA('The Hosted Auth page (HTML)') }, async (req, reply) => {
    const { id } = req.params;
    try {
      const { authorization: a, setCookie, csrf } = await authorizations.open(id, cookieOf(req, id));
      if (setCookie) {
        const maxAge = Math.max(1, Math.floor((Date.parse(a.expires_at) - platform.clock()) / 1000));
        reply.header('set-cookie', `${cookieName(id)}=${setCookie}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`);
      }
      const base = `/v1/hosted-auth/${id}`;
      const notice = noticeText(typeof req.query.n === 'string' ? req.query.n : undefined);
      if (a.status === 'code_sent') return await send(reply, a, 200, { step: 'code', action: `${base}/code`, resendAction: `${base}/resend`, sentTo: maskEmail(a.email ?? ''), csrf, notice });
      if (a.status === 'totp') return await send(reply, a, 200, { step: 'totp', action: `${base}/totp`, lostAction: `${base}/lost`, csrf, notice });
      if (a.status === 'recovery_code') return await send(reply, a, 200, { step: 'recovery_code', action: `${base}/recovery-code`, csrf, notice });
      if (a.status === 'recovery_email') return await send(reply, a, 200, { step: 'code', action: `${base}/recovery-email`, resendAction: `${base}/resend`, sentTo: maskEmail(a.email ?? ''), csrf, notice });
      if (a.status === 'recovery_enrol' && a.recovery) {
        const theme = await themeOf(a, 'hosted_auth');
        const p = totpProvisioning(a.recovery.secret, String(theme.brand_name ?? 'Hosted Auth'), a.email ?? a.member_id ?? 'member');
        return await send(reply, a, 200, { step: 'totp_setup', action: `${base}/recovery-enrol`, base32: p.base32, uri: p.uri, csrf, notice });
      }
      if (a.status === 'recovery_codes') return await send(reply, a, 200, { step: 'recovery_codes_intro', action: `${base}/recovery-codes`, csrf, notice });
      if (a.status === 'recovery_notice') return await send(reply, a, 200, { step: 'recovery_notice', action: `${base}/recovery-accept`, csrf, notice });
      return await send(reply, a, 200, { step: 'email', action: `${base}/email`, csrf, notice });
    } catch (err) {
      return refusal(reply, id, err);
    }
  });

  const post = formPoster<CodeToSend, RecoveryNotice>({
    app, page: 'hosted-auth', schema: SCHEMA, rateLimit, tooManyAttempts, cookieOf, refusal, dispatch, notify,
    // Shown in this answer only (no-store); the acknowledgement form carries the same CSRF token.
    codes: async (reply, id, cookie, codes) => send(reply, await authorizations.find(id), 200, { step: 'codes', codes, ackAction: `/v1/hosted-auth/${id}/recovery-ack`, csrf: authorizations.csrfOf(id, cookie!) }),
  });
  post('email', 'Hosted Auth page: submit the email address', (id, c, f) => authorizations.submitEmail(id, c, f.csrf, f.email));
  post('code', 'Hosted Auth page: submit the emailed six-digit code', (id, c, f) => authorizations.submitCode(id, c, f.csrf, f.code));
  post('resend', 'Hosted Auth page: send a new email code', (id, c, f) => authorizations.resend(id, c, f.csrf));
  post('totp', 'Hosted Auth page: submit the TOTP code', (id, c, f) => authorizations.submitTotp(id, c, f.csrf, f.code));
  post('lost', 'Hosted Auth page: begin lost-all-factor recovery from the TOTP step', (id, c, f) => authorizations.startRecovery(id, c, f.csrf));
  post('recovery-code', 'Hosted Auth page, recovery: submit one saved recovery code', (id, c, f) => authorizations.submitRecoveryCode(id, c, f.csrf, f.code));
  post('recovery-email', 'Hosted Auth page, recovery: submit the fresh email code', (id, c, f) => authorizations.submitRecoveryEmail(id, c, f.csrf, f.code));
  post('recovery-enrol', 'Hosted Auth page, recovery: confirm the replacement TOTP factor with a code', (id, c, f) => authorizations.submitRecoveryEnrol(id, c, f.csrf, f.code));
  post('recovery-codes', 'Hosted Auth page, recovery: show a new recovery-code set (once)', (id, c, f) => authorizations.recoveryCodes(id, c, f.csrf));
  post('recovery-ack', 'Hosted Auth page, recovery: acknowledge the new recovery codes', (id, c, f) => authorizations.acknowledgeRecoveryCodes(id, c, f.csrf, f.ack));
  post('recovery-accept', 'Hosted Auth page, recovery: accept the security notification and finish', (id, c, f) => authorizations.acceptRecovery(id, c, f.csrf, f.accept));
};
