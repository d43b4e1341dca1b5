// The Hosted Auth page's HTML (platform-api.md "Confidential exchange rules" 12: "branding comes from the
// tenant theme"; docs/platform/hosted-auth.md "The page"). Plain forms and POST-redirect-GET, no script:
// the Content-Security-Policy allows no script at all, styles only by a per-response nonce, forms only to
// this page and the application's registered origin (a form's redirect to the callback is checked by
// form-action too), and no framing. Every value from the theme or the request is escaped.
// The Account Center's two passkey steps are the exception (docs/platform/account-center.md "Passkeys"):
// they load the one WebAuthn script (account-center-script.ts) from this API, allowed by the response's
// nonce and pinned by its integrity digest; no other page allows a script.
import { randomBytes } from 'node:crypto';
import type { Theme } from '../branding/branding-service.ts';
import { PASSKEY_SCRIPT_INTEGRITY, PASSKEY_SCRIPT_PATH } from './account-center-script.ts';

const ESC: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', '\'': '&#39;' };
export const esc = (s: string): string => s.replace(/[&<>"']/g, (c) => ESC[c]!);
const color = (v: unknown, fallback: string): string => (typeof v === 'string' && /^#[0-9A-Fa-f]{6}$/.test(v) ? v : fallback);
const text = (v: unknown, fallback: string): string => (typeof v === 'string' && v.length > 0 ? v : fallback);

/**
 * The security headers of every page answer; `formOrigin`: the application's origins forms may lead to,
 * when known; `script`: the page runs the passkey script (that script, by this response's nonce, and no
 * string-to-code or HTML sink: Trusted Types required with no policy).
 */
export function pageHeaders(nonce: string, formOrigin?: string, imageOrigin?: string, script = false): Record<string, string> {
  const csp = [
    'default-src \'none\'', ...(script ? [`script-src 'nonce-${nonce}'`, 'require-trusted-types-for \'script\'', 'trusted-types \'none\''] : []),
    `style-src 'nonce-${nonce}'`, `img-src 'self'${imageOrigin ? ` ${imageOrigin}` : ''}`,
    `form-action 'self'${formOrigin ? ` ${formOrigin}` : ''}`, 'frame-ancestors \'none\'', 'base-uri \'none\'',
  ].join('; ');
  return {
    'content-type': 'text/html; charset=utf-8', 'content-security-policy': csp, 'x-frame-options': 'DENY', 'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer', 'cache-control': 'no-store', 'cross-origin-opener-policy': 'same-origin', 'cross-origin-resource-policy': 'same-origin',
  };
}

export const newNonce = (): string => randomBytes(16).toString('base64');

/** The https origin of an absolute logo URL, for img-src; undefined for a path on this API. */
export function logoOrigin(theme: Theme): string | undefined {
  const u = theme.logo_url;
  if (typeof u !== 'string' || u.startsWith('/')) return undefined;
  try {
    const p = new URL(u);
    return p.protocol === 'https:' ? p.origin : undefined;
  } catch {
    return undefined;
  }
}

export type PageStep =
  | { step: 'email'; action: string; title?: string }
  | { step: 'code'; action: string; resendAction: string; sentTo: string }
  | { step: 'totp'; action: string; lostAction?: string }
  | { step: 'error'; code: string; message: string; title?: string; backHref?: string }
  // Lost-all-factor recovery and the Account Center (docs/platform/account-center.md).
  | { step: 'recovery_code'; action: string }
  | { step: 'totp_setup'; action: string; base32: string; uri: string }
  | { step: 'recovery_codes_intro'; action: string }
  | { step: 'codes'; codes: string[]; ackAction?: string; backHref?: string }
  | { step: 'recovery_notice'; action: string }
  | {
    step: 'account'; totp: boolean; enrolledAt: string | null; codesRemaining: number; restrictedUntil: string | null; enrolAction: string; removeAction: string; codesAction: string; finishAction: string;
    /** Account Center passkeys, when the tenant's opt-in holds: how many the member has, and where adding one begins. */
    passkeys?: { count: number; addAction: string } | undefined;
  }
  // Account Center passkeys: registration, and the approval of a member action (the script's two ceremonies).
  | { step: 'passkey_setup'; action: string; options: string; backHref: string }
  | { step: 'approve'; action: string; declineAction: string; options: string; lines: string[]; purpose: string | null };

/** Whether a step runs the passkey script. */
export const runsScript = (s: PageStep): boolean => s.step === 'passkey_setup' || s.step === 'approve';

const NOTICES: Record<string, string> = {
  email_invalid: 'Enter a valid email address.',
  code_wrong: 'That code is not right. Check the latest email and try again.',
  code_expired: 'That code expired. Ask for a new one.',
  totp_wrong: 'That authenticator code is not right, or was already used. Wait for the next one.',
  resent: 'We sent a new code. Only the newest code works.',
  resend_wait: 'Wait a little before asking for another code.',
  resend_exhausted: 'No more codes can be sent for this sign-in. Go back to the application and start again.',
  recovery_code_wrong: 'That recovery code is not right, or was already used.',
  ack_required: 'Tick the box to confirm you saved the new recovery codes.',
  accept_required: 'Tick the box to accept the security notice.',
  totp_enrolled: 'Your authenticator app is set up.',
  totp_removed: 'Your authenticator app was removed.',
  passkey_enrolled: 'Your passkey is set up.',
  passkey_failed: 'Your passkey\'s answer was not accepted. Try again.',
  passkey_expired: 'That passkey setup took too long. Start again.',
};

/** A known notice key's text; an unknown key shows nothing (the query string is the visitor's to edit). */
export const noticeText = (key: string | undefined): string | undefined => (key && Object.hasOwn(NOTICES, key) ? NOTICES[key] : undefined);

export function renderPage(theme: Theme, nonce: string, s: PageStep & { csrf?: string; notice?: string | undefined }): string {
  const brand = text(theme.brand_name, 'Sign in');
  const title = text(theme.app_title, brand);
  const primary = color(theme.primary_color, '#1F4FD8');
  const secondary = color(theme.secondary_color, '#0F172A');
  const logo = typeof theme.logo_url === 'string' ? `<img class="logo" src="${esc(theme.logo_url)}" alt="">` : '';
  const hidden = s.csrf ? `<input type="hidden" name="csrf" value="${esc(s.csrf)}">` : '';
  const notice = s.notice ? `<p class="notice" role="alert">${esc(s.notice)}</p>` : '';
  let body: string;
  switch (s.step) {
    case 'email':
      body = `<h1>${esc(s.title ?? 'Sign in')}</h1><p>Enter your email address. We will send you a six-digit code.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="email" maxlength="254" required autofocus>
<button id="submit" type="submit">Send code</button></form>`;
      break;
    case 'code':
      body = `<h1>Check your email</h1><p>If ${esc(s.sentTo)} can sign in here, a six-digit code is on its way. It works for 10 minutes.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<label for="code">Code</label>
<input id="code" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<button id="submit" type="submit">Continue</button></form>
<form method="post" action="${esc(s.resendAction)}">${hidden}<button id="resend" class="link" type="submit">Send a new code</button></form>`;
      break;
    case 'totp':
      body = `<h1>Authenticator code</h1><p>Enter the six-digit code from your authenticator app.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<label for="totp">Authenticator code</label>
<input id="totp" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<button id="submit" type="submit">Verify</button></form>${s.lostAction ? `
<form method="post" action="${esc(s.lostAction)}">${hidden}<button id="lost" class="link" type="submit">Lost your authenticator?</button></form>` : ''}`;
      break;
    case 'recovery_code':
      body = `<h1>Use a recovery code</h1><p>Enter one of the recovery codes you saved. Each code works once. We will then email you a new six-digit code.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<label for="recovery">Recovery code</label>
<input id="recovery" name="code" maxlength="16" autocomplete="off" required autofocus>
<button id="submit" type="submit">Continue</button></form>`;
      break;
    case 'totp_setup':
      body = `<h1>Set up your authenticator app</h1><p>Add this key to your authenticator app, then enter the six-digit code it shows.</p>${notice}
<p>Key: <code id="totp-secret">${esc(s.base32)}</code></p><p>Or open: <code id="totp-uri">${esc(s.uri)}</code></p>
<form method="post" action="${esc(s.action)}">${hidden}<label for="totp">Code from the app</label>
<input id="totp" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required autofocus>
<button id="submit" type="submit">Confirm</button></form>`;
      break;
    case 'recovery_codes_intro':
      body = `<h1>New recovery codes</h1><p>Your old recovery codes stop working. Get a new set and save it somewhere safe: it is shown only once.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<button id="submit" type="submit">Show my new recovery codes</button></form>`;
      break;
    case 'codes':
      body = `<h1>Your recovery codes</h1><p>Save these codes now. They are shown only this once, and each works once.</p>
<ul id="recovery-codes" class="codes">${s.codes.map((c) => `<li>${esc(c)}</li>`).join('')}</ul>${s.ackAction ? `
<form method="post" action="${esc(s.ackAction)}">${hidden}<label class="check"><input id="ack" type="checkbox" name="ack" value="yes" required> I saved these recovery codes</label>
<button id="submit" type="submit">Continue</button></form>` : ''}${s.backHref ? `<p><a id="back" href="${esc(s.backHref)}">Back to your account</a></p>` : ''}`;
      break;
    case 'recovery_notice':
      body = `<h1>Security notice</h1><p>Your authenticator and recovery codes will be replaced. Every signed-in session ends now, we email you about this change, and for 24 hours (and until you sign in again after that) actions that need your approval are blocked.</p>${notice}
<form method="post" action="${esc(s.action)}">${hidden}<label class="check"><input id="accept" type="checkbox" name="accept" value="yes" required> I understand</label>
<button id="submit" type="submit">Finish recovery</button></form>`;
      break;
    case 'account':
      body = `<h1>Your account security</h1>${notice}
<p id="factor-status">${s.totp ? `Authenticator app: set up${s.enrolledAt ? ` (${esc(s.enrolledAt.slice(0, 10))})` : ''}` : 'Authenticator app: not set up'}</p>
<p id="codes-status">Recovery codes left: ${s.codesRemaining}</p>${s.restrictedUntil ? `<p id="restricted">Approvals are blocked until ${esc(s.restrictedUntil)} and your next sign-in after it.</p>` : ''}
${s.totp ? `<form method="post" action="${esc(s.removeAction)}">${hidden}<label for="remove-code">Code from the app, to remove it</label>
<input id="remove-code" name="code" inputmode="numeric" pattern="[0-9]{6}" maxlength="6" autocomplete="one-time-code" required>
<button id="remove" type="submit">Remove authenticator</button></form>` : `<form method="post" action="${esc(s.enrolAction)}">${hidden}<button id="enrol" type="submit">Set up an authenticator app</button></form>`}
${s.passkeys ? `<p id="passkey-count">Passkeys: ${s.passkeys.count}</p><form method="post" action="${esc(s.passkeys.addAction)}">${hidden}<button id="passkey-add" type="submit">Add a passkey</button></form>` : ''}
<form method="post" action="${esc(s.codesAction)}">${hidden}<button id="codes" type="submit">Get new recovery codes</button></form>
<form method="post" action="${esc(s.finishAction)}">${hidden}<button id="finish" type="submit">Done</button></form>`;
      break;
    case 'passkey_setup':
      body = `<h1>Add a passkey</h1><p>Your device will ask you to confirm with your fingerprint, face or screen lock. The passkey works only on this site.</p>${notice}
<form id="passkey-form" method="post" action="${esc(s.action)}" data-ceremony="create" data-options="${esc(s.options)}">${hidden}
<input type="hidden" name="id"><input type="hidden" name="client_data_json"><input type="hidden" name="attestation_object"><input type="hidden" name="transports">
<button id="passkey-start" type="button" disabled>Create passkey</button></form><p id="passkey-status" role="status"></p>
<p><a id="back" href="${esc(s.backHref)}">Back to your account</a></p>`;
      break;
    case 'approve':
      body = `<h1>Approve with your passkey</h1><p>The application asks you to approve exactly this${s.purpose ? ` (${esc(s.purpose)})` : ''}:</p>
<ul id="action-lines">${s.lines.map((l) => `<li>${esc(l)}</li>`).join('')}</ul>${notice}
<form id="passkey-form" method="post" action="${esc(s.action)}" data-ceremony="get" data-options="${esc(s.options)}">${hidden}
<input type="hidden" name="id"><input type="hidden" name="authenticator_data"><input type="hidden" name="client_data_json"><input type="hidden" name="signature">
<button id="passkey-start" type="button" disabled>Approve</button></form><p id="passkey-status" role="status"></p>
<form method="post" action="${esc(s.declineAction)}">${hidden}<button id="decline" class="link" type="submit">Decline and go back</button></form>`;
      break;
    case 'error':
      body = `<h1>${esc(s.title ?? 'Sign-in stopped')}</h1><p class="error" data-error-code="${esc(s.code)}">${esc(s.message)}</p>${s.backHref ? `<p><a id="back" href="${esc(s.backHref)}">Back to your account settings</a></p>` : ''}`;
      break;
  }
  const footer = typeof theme.footer_text === 'string' ? `<footer>${esc(theme.footer_text)}</footer>` : '';
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer"><title>${esc(title)}</title>
<style nonce="${esc(nonce)}">
*{box-sizing:border-box}body{margin:0;font-family:system-ui,sans-serif;color:${secondary};background:#fff}
.brand-bar{height:56px;background:${primary};display:flex;align-items:center;padding:0 24px;color:#fff;font-weight:600}
.logo{height:32px;margin-right:12px}main{max-width:420px;margin:40px auto;padding:0 24px}
label{display:block;margin:16px 0 6px}input{width:100%;padding:10px;font-size:16px;border:1px solid #94A3B8;border-radius:6px}
button{margin-top:16px;width:100%;padding:12px;font-size:16px;border:0;border-radius:6px;background:${primary};color:#fff}
button.link{background:none;color:${primary};width:auto;padding:0}.check input{width:auto;margin-right:8px}.codes{font-family:monospace;font-size:18px}code{word-break:break-all}.notice,.error{color:#B91C1C}footer{text-align:center;font-size:12px;margin:40px 0}
</style></head>
<body><header class="brand-bar" id="brand-bar">${logo}<span>${esc(brand)}</span></header>
<main>${body}</main>${footer}${runsScript(s) ? `<script src="${PASSKEY_SCRIPT_PATH}" nonce="${esc(nonce)}" integrity="${PASSKEY_SCRIPT_INTEGRITY}"></script>` : ''}</body></html>`;
}
