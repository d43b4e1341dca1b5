// The browser package (docs/platform/bff.md "The browser package"): a page's client of its own
// same-origin BFF. Bundled for browsers by deploy/sdk/build-browser.mjs.
export { BffClient, type BffClientOptions, type PageLocation, type SessionStatus, type Profile, type Enrolment, type Avatar, type Page, type PageQuery, type DataExport, type Json } from './bff-browser-client.ts';
export { BffBrowserError, BFF_BROWSER_ERROR_CODES, type BffBrowserErrorCode } from './bff-browser-error.ts';
export { BFF_BASE, BFF_ROUTES, BFF_CSRF_HEADER, BFF_CSRF_VALUE, type BffRoute } from './bff-routes.ts';
