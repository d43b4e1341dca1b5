// The tenancy collections (docs/platform/tenancy.md): tenants, their workspaces and bearer keys, the
// audit log, and the replay guards of MFA and TOTP; each declared once with its record type
// (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { AuditEntry } from './audit-log.ts';
import type { UseMarker } from './mfa-tokens.ts';
import type { BearerKeyRecord, BearerKeyUse, TenantRecord, TotpFailures, TotpLastStep, WorkspaceRecord } from './tenancy-service.ts';

export const TENANTS = collection<TenantRecord>('tenants');
/** Index `<tenant> NUL <workspace id>`. */
export const WORKSPACES = collection<WorkspaceRecord>('workspaces');
/** Index `<workspace> NUL <key id>` (tenancy-service.ts `keyIndex`). */
export const BEARER_KEYS = collection<BearerKeyRecord>('bearer_keys');
/** Per bearer key: when it last authenticated a request, to the minute. */
export const BEARER_KEY_USES = collection<BearerKeyUse>('bearer_key_uses');
/** Index `<workspace> NUL <entry id>`. */
export const AUDIT_LOG = collection<AuditEntry>('audit_log');
/** One marker per MFA token used, keyed so that they sort by expiry (mfa-tokens.ts). */
export const MFA_TOKEN_USES = collection<UseMarker>('mfa_token_uses');
/** Per bearer key: failed TOTP codes in the current window. */
export const TOTP_FAILURES = collection<TotpFailures>('totp_failures');
/** Per bearer key: the last TOTP step accepted, so a code is never accepted twice. */
export const TOTP_LAST_STEP = collection<TotpLastStep>('totp_last_step');
/** Data migrations done, by name, with when and what they moved (environments.ts). */
export const MIGRATIONS = collection<{ at: string }>('migrations');
