// The branding collections (docs/platform/branding.md), each declared once with its record type
// (docs/api-storage.md, "The interface").
import { collection } from '../store/collection.ts';
import type { BrandingRecord } from './branding-service.ts';
import type { DomainRecord, NameEntry } from './email-domains.ts';

/** Per workspace (per tenant before the move to per-environment records, tenancy/environments.ts). */
export const BRANDING = collection<BrandingRecord>('branding');
/** Index `<workspace> NUL <domain id>`. */
export const EMAIL_DOMAINS = collection<DomainRecord>('email_domains');
/** `<domain> NUL <workspace>`: the workspaces a sending domain is registered in. */
export const EMAIL_DOMAIN_NAMES = collection<NameEntry>('email_domain_names');
/** Object keys of logo uploads granted, with who may set them; granted for 15 minutes. */
export const UPLOAD_GRANTS = collection<{ tenant: string; workspace?: string }>('upload_grants');
/** Object keys of confirmed logos, served publicly. */
export const BRANDING_LOGOS = collection<{ tenant: string; workspace?: string }>('branding_logos');
