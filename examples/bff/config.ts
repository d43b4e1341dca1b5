// The sample BFF's settings, read once from the environment at start, checked, frozen (STYLE.md habit 8).
import { randomBytes } from 'node:crypto';

export interface SampleBffConfig {
  apiUrl: string;
  apiKey: string;
  publishableKey: string;
  origin: string;
  redirectUri: string;
  holderApiKey: string | undefined;
  sandboxDemo: boolean;
  storeKey: Uint8Array;
  /** The store key was made at start: sessions do not survive a restart. */
  storeKeyGenerated: boolean;
  host: string;
  port: number;
}

function need(env: NodeJS.ProcessEnv, name: string, re: RegExp, what: string): string {
  const v = env[name];
  if (v === undefined || !re.test(v)) throw new Error(`${name} must be ${what}`);
  return v;
}

export function loadSampleBffConfig(env: NodeJS.ProcessEnv = process.env): Readonly<SampleBffConfig> {
  const apiUrl = new URL(need(env, 'BFF_API_URL', /^https?:\/\/[^/]+\/?$/, 'the API\'s origin, e.g. http://127.0.0.1:8080')).origin;
  const origin = new URL(need(env, 'BFF_ORIGIN', /^https?:\/\/[^/]+\/?$/, 'this BFF\'s origin, the Hosted application\'s registered origin, e.g. http://localhost:3000')).origin;
  const redirectUri = env.BFF_REDIRECT_URI ?? `${origin}/callback`;
  if (new URL(redirectUri).origin !== origin) throw new Error('BFF_REDIRECT_URI must be a URL of BFF_ORIGIN (the application\'s result_callback_url)');
  const storeKeyHex = env.BFF_STORE_KEY;
  if (storeKeyHex !== undefined && !/^[0-9a-f]{64}$/i.test(storeKeyHex)) throw new Error('BFF_STORE_KEY must be 64 hex digits (32 bytes)');
  const holderApiKey = env.BFF_HOLDER_API_KEY;
  if (holderApiKey !== undefined && !/^svc_(test|live)_\S+$/.test(holderApiKey)) throw new Error('BFF_HOLDER_API_KEY must be a workspace key (svc_test_…)');
  const port = Number(env.BFF_PORT ?? new URL(origin).port ?? 3000) || 3000;
  return Object.freeze({
    apiUrl, origin, redirectUri,
    apiKey: need(env, 'BFF_API_KEY', /^svc_(test|live)_\S+$/, 'the Hosted application\'s BFF key (svc_test_…)'),
    publishableKey: need(env, 'BFF_PUBLISHABLE_KEY', /^pk_(test|live)_[A-Za-z0-9_-]+$/, 'the application\'s publishable key (pk_test_…)'),
    holderApiKey,
    sandboxDemo: env.BFF_SANDBOX_DEMO === '1',
    storeKey: storeKeyHex ? new Uint8Array(Buffer.from(storeKeyHex, 'hex')) : new Uint8Array(randomBytes(32)),
    storeKeyGenerated: storeKeyHex === undefined,
    host: env.BFF_HOST ?? '127.0.0.1',
    port,
  });
}
