// Descriptions, by operationId, for operations whose route gives none (docs/api-reference.md); an
// operation in neither gets one built from its summary and its security (api/openapi/document.ts).
export const DESCRIPTIONS: Readonly<Record<string, string>> = {
  getLiveness: 'Answers 200 while the process runs; it reads nothing. For a load balancer\'s liveness probe.',
  getReadiness: 'Answers 200 once the store is open and the coordinators configured answer; 503 otherwise, so a load balancer sends no traffic to an instance that cannot serve.',
  getWebhookEndpoints: 'The workspace\'s webhook endpoints, newest first, a page at a time (docs/platform/pagination.md). Secrets are never answered here, only their fingerprints.',
  getWebhookEndpointsById: 'One webhook endpoint of the workspace: its URL, subscribed events, whether it is enabled, and its secret\'s fingerprint (the previous one too during a rotation overlap).',
  getAccountHolders: 'The workspace\'s account holders (individuals and businesses), a page at a time, filtered by status or type (docs/platform/account-holders.md).',
  getAccountHoldersById: 'One account holder of the workspace with its profile, status and verification state (docs/platform/account-holders.md).',
  getVaults: 'The organization\'s vaults, a page at a time: each with its threshold, its committee of signer nodes and its public key (docs/vault-api.md).',
};
