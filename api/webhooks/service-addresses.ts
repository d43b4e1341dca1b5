// The service's own addresses, which no webhook may reach even when the allow-list admits their range
// (docs/security.md "Webhook destinations (SSRF)"): the API's listen address and public URL, every
// coordinator it is configured with, and the operator API it knows of.
import type { ApiConfig } from '../config.ts';

/** `host:port` entries and origins for DestinationPolicy.withSelf. */
export function serviceAddresses(config: ApiConfig): string[] {
  const out = [`${config.host.includes(':') && !config.host.startsWith('[') ? `[${config.host}]` : config.host}:${config.port}`];
  if (config.publicUrl) out.push(config.publicUrl);
  if (config.operatorApiUrl) out.push(config.operatorApiUrl);
  if (config.coordinator) out.push(config.coordinator);
  if (config.coordinators) out.push(...config.coordinators.split(',').map((x) => x.slice(x.indexOf('=') + 1)));
  if (config.nodeCoordinatorAddress) out.push(...config.nodeCoordinatorAddress.split(','));
  return out;
}
