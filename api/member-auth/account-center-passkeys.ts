// Passkeys on the Account Center (docs/end-user-auth.md "Account Center passkeys"; docs/platform/
// account-center.md "Passkeys"): the WebAuthn registration ceremony (@simplewebauthn/server) for a
// signed-in Hosted Auth member of an opted-in tenant, and the member credential the service signs for
// the new passkey under the organization's Account Center key (account-center-keys.ts), in the shape a
// customer's credential has (core/auth/member-credential.ts, api/sdk/member-credential.ts).
//
// Everything here runs only while the opt-in holds twice: the Hosted application's
// `account_center_passkeys` is on and the organization's customer-signed registration in force names this
// service's key and origin (what the nodes enforce). Either missing is 409 account_center_opt_in_unregistered.
import { generateRegistrationOptions, verifyRegistrationResponse, type RegistrationResponseJSON } from '@simplewebauthn/server';
import { ed25519 } from '@noble/curves/ed25519.js';
import { CustodyError } from '../../core/errors/custody-error.ts';
import { verifyMemberCredential, type AccountCenterOptIn } from '../../core/auth/member-credential.ts';
import type { EndUserAuthConfig } from '../../core/auth/end-user-token.ts';
import { signMemberCredential } from '../sdk/member-credential.ts';
import type { AccountCenterKeys } from './account-center-keys.ts';
import type { ApplicationRecord } from './member-auth-records.ts';
import type { HostedMemberRecord, HostedPasskey } from './hosted-records.ts';

/** Where the opt-in is read: the service's keys, and the registration in force of the workspace's organization. */
export interface AccountCenterPasskeySource {
  keys: AccountCenterKeys;
  registration(scope: { tenant: string; workspace: string }): Promise<{ org: string; config: EndUserAuthConfig | undefined } | undefined>;
}

/** The opt-in as it holds now for one application. */
export interface PasskeyOptIn {
  org: string;
  config: EndUserAuthConfig;
  optIn: AccountCenterOptIn;
  /** The Account Center origin's host: the RP ID of every passkey enrolled there. */
  rpId: string;
}

/** The browser's registration answer as the page's form posts it (base64url parts; transports comma-separated). */
export interface RegistrationFields { id: string; client_data_json: string; attestation_object: string; transports: string }

/** A member credential lives this long (the nodes accept at most 400 days). */
const CREDENTIAL_LIFETIME_S = 365 * 86_400;
const ALGORITHMS = [-7, -8];
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64url');

const off = () => new CustodyError('account_center_opt_in_unregistered', 'Account Center passkeys are not on for this application: its `account_center_passkeys` setting and the organization\'s customer-signed registration naming this service\'s Account Center key are both needed');

/** The opt-in of `app`, or 409 account_center_opt_in_unregistered. */
export async function passkeyOptIn(source: AccountCenterPasskeySource | undefined, app: ApplicationRecord): Promise<PasskeyOptIn> {
  if (!source || app.hosted?.account_center_passkeys !== true) throw off();
  const reg = await source.registration(app);
  const ac = reg?.config?.accountCenter;
  if (!reg || !reg.config || !source.keys.registered(reg.org, ac)) throw off();
  return { org: reg.org, config: reg.config, optIn: ac!, rpId: new URL(ac!.origin).hostname };
}

/** Whether the opt-in holds (for what the page offers). */
export const passkeysOn = async (source: AccountCenterPasskeySource | undefined, app: ApplicationRecord): Promise<boolean> =>
  passkeyOptIn(source, app).then(() => true, (err: unknown) => {
    if (err instanceof CustodyError && err.code === 'account_center_opt_in_unregistered') return false;
    throw err;
  });

/** The registration options for `member` (JSON, what the page hands navigator.credentials.create) and their challenge. */
export async function registrationOptions(o: PasskeyOptIn, member: HostedMemberRecord, rpName: string): Promise<{ options: string; challenge: string }> {
  const options = await generateRegistrationOptions({
    rpName, rpID: o.rpId, userName: member.email, userDisplayName: member.email, userID: new TextEncoder().encode(member.id),
    attestationType: 'none', timeout: 120_000, supportedAlgorithmIDs: ALGORITHMS,
    excludeCredentials: (member.passkeys ?? []).map((p) => ({ id: p.credential_id })),
    authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
  });
  return { options: JSON.stringify(options), challenge: options.challenge };
}

/**
 * Verifies the browser's registration answer against the stored challenge, the Account Center origin and
 * its host as RP ID, with user verification; signs the member credential for the new passkey under the
 * organization's Account Center key and checks it as every node will. A refusal is 400 validation_failed.
 */
export async function enrolPasskey(source: AccountCenterPasskeySource, o: PasskeyOptIn, member: HostedMemberRecord, challenge: string, answer: RegistrationFields, nowMs: number): Promise<HostedPasskey> {
  const refused = (why: string) => new CustodyError('validation_failed', `the passkey registration was refused: ${why}`);
  const response: RegistrationResponseJSON = {
    id: answer.id, rawId: answer.id, type: 'public-key', clientExtensionResults: {},
    response: { clientDataJSON: answer.client_data_json, attestationObject: answer.attestation_object, transports: answer.transports.split(',').filter(Boolean) as RegistrationResponseJSON['response']['transports'] },
  };
  let info;
  try {
    const clientData = JSON.parse(Buffer.from(answer.client_data_json, 'base64url').toString('utf8')) as { crossOrigin?: unknown; topOrigin?: unknown };
    if (clientData.crossOrigin === true || clientData.topOrigin !== undefined) throw new Error('made in a cross-origin frame');
    const out = await verifyRegistrationResponse({
      response, expectedChallenge: challenge, expectedOrigin: o.optIn.origin, expectedRPID: o.rpId, expectedType: 'webauthn.create',
      requireUserVerification: true, supportedAlgorithmIDs: ALGORITHMS,
    });
    if (!out.verified) throw new Error('it does not verify');
    info = out.registrationInfo;
  } catch (err) {
    throw refused((err as Error).message);
  }
  const id = info.credential.id;
  if ((member.passkeys ?? []).some((p) => p.credential_id === id)) throw refused('this passkey is already enrolled');
  const now = Math.floor(nowMs / 1000);
  const seed = source.keys.seed(o.org);
  const key = { kty: 'OKP', crv: 'Ed25519', x: b64(ed25519.getPublicKey(seed)), d: b64(seed) };
  const credential = await signMemberCredential({
    key, kid: o.optIn.jwk.kid!, alg: 'EdDSA', audience: o.config.audience, subject: member.id, credentialId: id, publicKey: info.credential.publicKey,
    rpId: o.rpId, origins: [o.optIn.origin], lifetimeSec: CREDENTIAL_LIFETIME_S, now,
  });
  // What the nodes will check: the credential verifies under the registration's opt-in, as enrolled there.
  const checked = await verifyMemberCredential({ jwks: o.config.jwks, audience: o.config.audience, accountCenter: o.config.accountCenter }, credential, now);
  if (checked.enrolledAt !== 'account_center') throw new CustodyError('bug', 'an Account Center credential did not verify as one');
  return { credential_id: id, credential, created_at: new Date(nowMs).toISOString(), expires_at: new Date((now + CREDENTIAL_LIFETIME_S) * 1000).toISOString() };
}
