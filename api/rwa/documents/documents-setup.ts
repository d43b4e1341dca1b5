// The documents-and-metadata part of the real-world-asset layer (docs/platform/rwa.md "Documents and
// metadata"), built over the platform's object store and Tokenization I's tokens and chains.
import type { Platform } from '../../platform.ts';
import type { Tokenization } from '../../tokenization/tokenization-setup.ts';
import type { TokenLog } from '../seams.ts';
import { DocumentService } from './document-service.ts';
import { MetadataService } from './metadata-service.ts';
import { NO_FIELDS, type TokenFieldsReader } from './token-fields-reader.ts';

export interface RwaDocuments {
  documents: DocumentService;
  metadata: MetadataService;
}

/**
 * `log`: the tokens' transparency log; without it documents and entitlements answer 503 and change nothing.
 * `fields`: the tokens' public field values; without it metadata comes from the token records alone.
 */
export function createRwaDocuments(platform: Platform, tokenization: Tokenization, log: TokenLog, fields: TokenFieldsReader | undefined): RwaDocuments {
  return {
    documents: new DocumentService({ store: platform.store, objects: platform.objects, tokens: tokenization.tokens, log, audit: platform.audit, clock: platform.clock }),
    metadata: new MetadataService({ tokens: tokenization.tokens, fields: fields ?? NO_FIELDS, chain: tokenization.chain }),
  };
}
