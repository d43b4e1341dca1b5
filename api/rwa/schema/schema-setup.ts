// The asset schema services (docs/platform/rwa.md "Asset schemas, bindings, fields and attesters"), over the
// platform's store and the token engine's tokens, appending to the tokens' logs through `log`.
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

export function createRwaSchemas(platform: Platform, tokenization: Tokenization, log: TokenLog): RwaSchemas {
  const schemas = new AssetSchemaService({ store: platform.store, audit: platform.audit, cursors: platform.cursors, clock: platform.clock });
  const fields = new TokenFieldsService({ store: platform.store, audit: platform.audit, clock: platform.clock, tokens: tokenization.tokens, schemas, log });
  const rebinds = new SchemaRebindService({ store: platform.store, audit: platform.audit, clock: platform.clock, schemas, fields, log });
  return { schemas, fields, rebinds };
}
