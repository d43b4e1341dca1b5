// The asset schema services (docs/platform/rwa.md "Asset schemas, bindings, fields and attesters"), over the
// platform's store and the token engine's tokens, appending to the tokens' logs through `log`.
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { Platform } from '../../platform.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenLog } from '../seams.ts';
import { AssetSchemaService } from './asset-schema-service.ts';
import { TokenFieldsService } from './token-fields-service.ts';
import { SchemaRebindService } from './schema-rebind-service.ts';

export interface RwaSchemas {
  schemas: AssetSchemaService;
  fields: TokenFieldsService;
  rebinds: SchemaRebindService;
}

/**
 * Where no token log is wired, changes to a token's real-world state are refused rather than made without
 * their log entry: reads and asset schemas still work.
 */
export const NO_TOKEN_LOG: TokenLog = {
  append: () => Promise.reject(new CustodyError('unavailable', 'the token transparency log is not configured: changes to a token\'s real-world state are refused')),
};

export function createRwaSchemas(platform: Platform, tokenization: Tokenization, log: TokenLog): RwaSchemas {
  const schemas = new AssetSchemaService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const fields = new TokenFieldsService({ store: platform.store, audit: platform.audit, clock: platform.clock, tokens: tokenization.tokens, schemas, log });
  const rebinds = new SchemaRebindService({ store: platform.store, audit: platform.audit, clock: platform.clock, schemas, fields, log });
  return { schemas, fields, rebinds };
}
