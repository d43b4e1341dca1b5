// The SDK, exported as the package's `./sdk` subpath (docs/sdk.md): the typed client with intent
// building and waits, request signing, and the webhook receiver helpers.
export * from './client.ts';
export * from './request-signer.ts';
export * from './webhook-receiver.ts';
