// The Account Center page (docs/platform/account-center.md): public routes under /v1/account-center/,
// reached by the member's browser through the handoff_url the BFF got. The Hosted Auth page's machinery
// (hosted-page.ts): the same CSP, the `__Host-` flow cookie bound at the first GET, a CSRF token derived
// from it in every form, the tenant's branding (its `account_center` surface), POST-redirect-GET. The
// member named by the handoff signs in (email code, then TOTP when it has one), then manages its
// factors, then Done sends the browser to the return URL with the one-time result. With the tenant's
// Account Center passkey opt-in, the member also adds passkeys here, and an approval visit shows a member
// action and takes the member's passkey answer to its nonce (the passkey script, account-center-script.ts).
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { httpStatusOfCode } from '../../core/errors/http-status.ts';
import type { Platform } from '../platform.ts';
import type { Mailer } from '../email/mailer.ts';
import { maskEmail } from '../email/mailer.ts';
import { resolveTheme } from '../branding/branding-service.ts';
import type { AccountCenter, AccountCenterCode } from '../member-auth/account-center.ts';
import type { AccountCenterHandoffRecord } from '../member-auth/account-center-records.ts';
import { recoveryCodesRemaining, totpProvisioning } from '../member-auth/hosted-factors.ts';
import type { AddressLimit } from '../rate-limits/rate-limits.ts';
import { noticeText } from './hosted-page.ts';
import { formPoster, pageSender } from './page-sender.ts';
import { PASSKEY_SCRIPT, PASSKEY_SCRIPT_PATH } from './account-center-script.ts';
import { namedCookieOf, useFormParser } from './hosted-page-routes.ts';

export interface AccountCenterPageOptions {
  platform: Platform;
  center: AccountCenter;
  mailer: Mailer | undefined;
  /** The per-client-address limit on form POSTs, shared by both pages (page-rate-limit.ts). */
  rateLimit?: AddressLimit | undefined;
}

const cookieName = (id: string) => `__Host-hac-${id.slice(4)}`;
const cookieOf = (req: FastifyRequest, id: string) => namedCookieOf(req, cookieName(id));
const formOrigins = (h: AccountCenterHandoffRecord): string => {
  const back = new URL(h.return_url).origin;
  return back === h.origin ? h.origin : `${h.origin} ${back}`;
};

export const accountCenterPageRoutes: FastifyPluginAsync<AccountCenterPageOptions> = async (app, { platform, center, mailer, rateLimit }) => {
  useFormParser(app);

  const { themeOf, send, tooManyAttempts } = pageSender<AccountCenterHandoffRecord>(platform, 'account_center', formOrigins);

  async function refusal(reply: FastifyReply, id: string, err: unknown) {
    if (!(err instanceof CustodyError)) throw err;
    const h = await center.find(id).catch(() => undefined);
    // A refused change that leaves the visit usable says so, and leads back to the settings.
    const stay = err.code === 'hosted_totp_last_factor';
    return send(reply, h, httpStatusOfCode(err.code), { step: 'error', code: err.code, message: err.message, ...(stay ? { title: 'Authenticator kept', backHref: `/v1/account-center/${id}` } : {}) });
  }

  /** Sends the code without holding the request; a failure is logged by its category only. */
  function dispatch(req: FastifyRequest, c: AccountCenterCode): void {
    if (!mailer) return;
    void (async () => {
      const theme = (await platform.branding.view({ tenant: c.tenant, workspace: c.workspace })).surfaces.email?.resolved ?? resolveTheme({}, null);
      const brand = String(theme.from_name ?? theme.brand_name ?? 'Account');
      await mailer.send({
        to: c.to, fromName: brand, subject: `${String(theme.brand_name ?? 'Your')} account security code`,
        text: `Use this code to open your account security settings:\n\n${c.code}\n\nIt works for 10 minutes. If you did not ask for it, ignore this email.\n`,
        html: `<p>Use this code to open your account security settings:</p><p style="font-size:24px;font-weight:600;letter-spacing:4px">${c.code}</p><p>It works for 10 minutes. If you did not ask for it, ignore this email.</p>`,
      });
    })().catch((err: unknown) => req.log.warn({ to: maskEmail(c.to), category: (err as { code?: string }).code ?? 'send_failed' }, 'account center code email not sent'));
  }

  const SCHEMA = (summary: string) => ({ summary, tags: ['member auth'], security: [], description: 'The Account Center page (HTML, form posts); reached by the member\'s browser through handoff_url. docs/platform/account-center.md' });

  // The passkey script: static, from this API only (the pages' CSP allows it by nonce, their markup pins its digest).
  app.get(PASSKEY_SCRIPT_PATH.replace('/v1', ''), { config: { public: true }, schema: { summary: 'The Account Center\'s passkey script (JavaScript)', tags: ['member auth'], security: [], description: 'The one script of the Account Center pages: the WebAuthn ceremony of its passkey steps. docs/platform/account-center.md "Passkeys"' } }, async (_req, reply) =>
    reply.headers({
      'content-type': 'text/javascript; charset=utf-8', 'x-content-type-options': 'nosniff', 'cache-control': 'no-cache',
      'cross-origin-resource-policy': 'same-origin', 'content-security-policy': 'default-src \'none\'; frame-ancestors \'none\'',
    }).send(PASSKEY_SCRIPT));

  app.get<{ Params: { id: string }; Querystring: { n?: string } }>('/account-center/:id', { config: { public: true }, schema: SCHEMA('The Account Center page (HTML)') }, async (req, reply) => {
    const { id } = req.params;
    try {
      const { handoff: h, member, setCookie, csrf } = await center.open(id, cookieOf(req, id));
      if (setCookie) {
        const maxAge = Math.max(1, Math.floor((Date.parse(h.expires_at) - platform.clock()) / 1000));
        reply.header('set-cookie', `${cookieName(id)}=${setCookie}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`);
      }
      const base = `/v1/account-center/${id}`;
      const notice = noticeText(typeof req.query.n === 'string' ? req.query.n : undefined);
      // An approval visit: the action, and the passkey's answer to its nonce; nothing else.
      if (h.member_action_id) {
        const v = await center.approvalView(h);
        return await send(reply, h, 200, { step: 'approve', action: `${base}/approve`, declineAction: `${base}/finish`, options: v.request, lines: v.lines, purpose: v.purpose, csrf, notice });
      }
      if (h.status === 'code_sent') return await send(reply, h, 200, { step: 'code', action: `${base}/code`, resendAction: `${base}/resend`, sentTo: 'your address', csrf, notice });
      if (h.status === 'totp') return await send(reply, h, 200, { step: 'totp', action: `${base}/totp`, csrf, notice });
      if (h.status === 'authenticated' && member) {
        if (h.pending_totp) {
          const theme = await themeOf(h, 'account_center');
          const p = totpProvisioning(h.pending_totp, String(theme.brand_name ?? 'Account'), member.email);
          return await send(reply, h, 200, { step: 'totp_setup', action: `${base}/enrol-confirm`, base32: p.base32, uri: p.uri, csrf, notice });
        }
        const app = await center.applicationOf(h);
        const offered = await center.passkeysOffered(app);
        if (h.pending_passkey && offered && Date.parse(h.pending_passkey.expires_at) > platform.clock()) {
          return await send(reply, h, 200, { step: 'passkey_setup', action: `${base}/passkey-finish`, options: h.pending_passkey.options, backHref: base, csrf, notice });
        }
        return await send(reply, h, 200, {
          step: 'account', totp: member.totp_secret !== null, enrolledAt: member.totp_enrolled_at ?? null, codesRemaining: recoveryCodesRemaining(member),
          restrictedUntil: member.restricted_until ?? null, enrolAction: `${base}/enrol`, removeAction: `${base}/remove`, codesAction: `${base}/recovery-codes`,
          finishAction: `${base}/finish`, csrf, notice, passkeys: offered ? { count: (member.passkeys ?? []).length, addAction: `${base}/passkey` } : undefined,
        });
      }
      return await send(reply, h, 200, { step: 'email', title: 'Confirm it is you', action: `${base}/email`, csrf, notice });
    } catch (err) {
      return refusal(reply, id, err);
    }
  });

  const post = formPoster<AccountCenterCode>({
    app, page: 'account-center', schema: SCHEMA, rateLimit, tooManyAttempts, cookieOf, refusal, dispatch,
    codes: async (reply, id, _cookie, codes) => send(reply, await center.find(id), 200, { step: 'codes', codes, backHref: `/v1/account-center/${id}` }),
  });
  post('email', 'Account Center page: submit the member\'s email address', (id, c, f) => center.submitEmail(id, c, f.csrf, f.email));
  post('code', 'Account Center page: submit the emailed six-digit code', (id, c, f) => center.submitCode(id, c, f.csrf, f.code));
  post('resend', 'Account Center page: send a new email code', (id, c, f) => center.resend(id, c, f.csrf));
  post('totp', 'Account Center page: submit the TOTP code', (id, c, f) => center.submitTotp(id, c, f.csrf, f.code));
  post('enrol', 'Account Center page: begin enrolling a TOTP factor', (id, c, f) => center.startEnrol(id, c, f.csrf));
  post('enrol-confirm', 'Account Center page: confirm the new TOTP factor with a current code', (id, c, f) => center.confirmEnrol(id, c, f.csrf, f.code));
  post('remove', 'Account Center page: remove the TOTP factor (needs a current code)', (id, c, f) => center.removeFactor(id, c, f.csrf, f.code));
  post('recovery-codes', 'Account Center page: generate a new recovery-code set (shown once)', (id, c, f) => center.generateCodes(id, c, f.csrf));
  post('finish', 'Account Center page: done (on an approval visit: decline), back to the application with the one-time result', (id, c, f) => center.finish(id, c, f.csrf));
  const rpName = async (id: string) => String((await themeOf(await center.find(id), 'account_center')).brand_name ?? 'Account');
  post('passkey', 'Account Center page: begin adding a passkey (the tenant\'s Account Center passkey opt-in must hold)', async (id, c, f) => center.passkeyBegin(id, c, f.csrf, await rpName(id)));
  post('passkey-finish', 'Account Center page: the browser\'s passkey registration answer', (id, c, f) => center.passkeyFinish(id, c, f.csrf, {
    id: f.id ?? '', client_data_json: f.client_data_json ?? '', attestation_object: f.attestation_object ?? '', transports: f.transports ?? '',
  }));
  post('approve', 'Account Center page: the member\'s passkey answer to the member action\'s nonce (an approval visit)', (id, c, f) => center.approve(id, c, f.csrf, f));
};
