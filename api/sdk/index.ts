// The SDK, exported as the package's `./sdk` subpath (docs/sdk.md): the typed client with intent
// building and waits, request signing, the intent preview, the SDK's error codes, the webhook
// receiver helpers, the platform API's client (one method per operation), and the server-side BFF
// helper for member sessions (docs/platform/bff.md).
export * from './client.ts';
export * from './request-signer.ts';
export * from './intent-preview.ts';
export * from './sdk-error.ts';
export * from './webhook-receiver.ts';
export * from './member-auth-client.ts';
export * from './bff-error.ts';
export * from './bff-cookies.ts';
export * from './bff-csrf.ts';
export * from './bff-store.ts';
export * from './bff-store-postgres.ts';
export * from './bff-sessions.ts';
export * from './bff-oidc.ts';
export * from './member-credential.ts';
export * from './key-export.ts';
export * from './policy.ts';
export * from './platform-client.ts';
export * from './platform-operations.ts';
