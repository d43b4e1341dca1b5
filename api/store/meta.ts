// The `meta` collection: single records the API creates once and keeps, each under its own id with its
// own shape (server-keys.ts `server_keys`, member-auth/exchange-cipher.ts `member_auth_exchange_key`), so
// its readers say which shape they read.
import { collection } from './collection.ts';

export const META = collection<unknown>('meta');
