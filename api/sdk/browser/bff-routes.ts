// The routes a customer BFF serves to its own pages, as the browser package (bff-browser-client.ts) calls
// them and the sample BFF (examples/bff/) answers them (docs/platform/bff.md "The browser package").
// Every path is relative to the page's origin: the browser talks to the customer's BFF only, never to
// the API, and nothing here names a member, a holder, a session or a key.

/** Sent on every call of the browser package; the BFF refuses a call without it (bff-csrf.ts). */
export const BFF_CSRF_HEADER = 'x-bff-csrf';
export const BFF_CSRF_VALUE = '1';

/** The default prefix of the BFF's member routes. */
export const BFF_BASE = '/bff';

/** Each route under the base, by what it does. `:id` is a data export's id. */
export const BFF_ROUTES = Object.freeze({
  /** GET, a top-level navigation: the BFF begins a sign-in and redirects to the sign-in page. */
  signIn: '/sign-in',
  /** POST: a session of a sandbox application's demo persona, where the BFF offers it. */
  signInSandboxDemo: '/sign-in/sandbox-demo',
  session: '/session',
  signOut: '/sign-out',
  enrolment: '/enrolment',
  profile: '/profile',
  avatar: '/avatar',
  avatarImage: '/avatar/image',
  balance: '/balance',
  transactions: '/transactions',
  bankBalance: '/bank-balance',
  bankTransactions: '/bank-transactions',
  consents: '/consents',
  dataExports: '/data-exports',
  dataExport: '/data-exports/:id',
  dataExportFile: '/data-exports/:id/file',
  verification: '/verification',
  wallets: '/wallets',
  walletReadiness: '/wallet-readiness',
  walletProvision: '/wallet-provision',
  accountCenter: '/account-center',
} as const);

export type BffRoute = keyof typeof BFF_ROUTES;
