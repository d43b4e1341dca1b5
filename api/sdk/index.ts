// The SDK, exported as the package's `./sdk` subpath (docs/sdk.md): the typed client with intent
// building and waits, request signing, the intent preview, the SDK's error codes, and the webhook
// receiver helpers.
export * from './client.ts';
export * from './request-signer.ts';
export * from './intent-preview.ts';
export * from './sdk-error.ts';
export * from './webhook-receiver.ts';
