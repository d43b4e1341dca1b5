// The transparency-log part of the real-world-asset layer as the configuration describes it
// (docs/platform/transparency-log.md): the log key of API_RWA_LOG_KEY_FILE (or the store's generated one),
// origins under API_RWA_LOG_ORIGIN (or API_PUBLIC_URL's host), witnesses reached through the webhooks'
// destination policy (API_WEBHOOK_ALLOWED_DESTINATIONS), and the provenance checks the other parts extend.
import type { ApiConfig } from '../../config.ts';
import type { Platform } from '../../platform.ts';
import { DestinationPolicy } from '../../webhooks/destination-policy.ts';
import { OutboundHttp } from '../../webhooks/outbound-http.ts';
import { loadLogKey, type LogKey } from './log-key.ts';
import { logCheckers, ProvenanceVerifier } from './provenance.ts';
import { StoredTokenLog } from './stored-token-log.ts';
import { WitnessService } from './witness-service.ts';

export interface TokenLogPart {
  /** The `TokenLog` the other parts append through. */
  log: StoredTokenLog;
  witnesses: WitnessService;
  /** Register further checks here (`provenance.register`). */
  provenance: ProvenanceVerifier;
  key: LogKey;
  close(): Promise<void>;
}

/** The origin prefix: the setting, else the public URL's host, else localhost. */
export function logOriginHost(config: Pick<ApiConfig, 'rwaLogOrigin' | 'publicUrl'>): string {
  return config.rwaLogOrigin ?? (config.publicUrl ? new URL(config.publicUrl).host : 'localhost');
}

export async function createTokenLog(config: ApiConfig, platform: Platform, opts: { witnessTimeoutMs?: number } = {}): Promise<TokenLogPart> {
  const key = await loadLogKey(platform.store, config.rwaLogKeyFile);
  const log = new StoredTokenLog({ store: platform.store, key, originHost: logOriginHost(config), clock: platform.clock });
  const http = new OutboundHttp({ policy: DestinationPolicy.fromAllowList(config.webhookAllowedDestinations), timeoutMs: opts.witnessTimeoutMs ?? 10_000 });
  const witnesses = new WitnessService({ store: platform.store, log, http, audit: platform.audit, clock: platform.clock });
  const provenance = new ProvenanceVerifier(async (_scope, tokenId) => ({
    scope: _scope, tokenId, records: await log.entries(tokenId), witnesses: await witnesses.list(tokenId), cosignatures: await witnesses.cosignatures(tokenId),
  }), logCheckers(key));
  return { log, witnesses, provenance, key, close: () => http.close() };
}
