// The asset schema templates (docs/platform/rwa.md "Asset schemas"): starting points a draft copies
// (`POST /rwa/asset-schemas/{id}/draft` with `{template}`), each a JSON Schema draft 2020-12 document
// whose `x-visibility` says what goes on chain. Kept small: an issuer adds what its instrument needs.
import { DRAFT_2020_12 } from './asset-schema-compiler.ts';

export interface AssetSchemaTemplate {
  id: string;
  name: string;
  description: string;
  json_schema: Record<string, unknown>;
}

const iso4217 = { type: 'string', pattern: '^[A-Z]{3}$', description: 'ISO 4217 currency code' };
const lei = { type: 'string', pattern: '^[A-Z0-9]{18}[0-9]{2}$', description: 'ISO 17442 Legal Entity Identifier' };
const isin = { type: 'string', pattern: '^[A-Z]{2}[A-Z0-9]{9}[0-9]$', description: 'ISO 6166 ISIN' };
const decimal = { type: 'string', pattern: '^(0|[1-9][0-9]{0,30})(\\.[0-9]{1,18})?$', description: 'a non-negative decimal as a string' };

const doc = (title: string, properties: Record<string, unknown>, required: string[]) => ({
  $schema: DRAFT_2020_12, title, type: 'object', properties, required, additionalProperties: false,
});

export const ASSET_SCHEMA_TEMPLATES: readonly AssetSchemaTemplate[] = [
  {
    id: 'bond',
    name: 'Bond',
    description: 'A fixed or floating rate debt security with a face value, a coupon and a maturity.',
    json_schema: doc('Bond', {
      isin: { ...isin, 'x-visibility': 'public' },
      issuer: {
        type: 'object', 'x-visibility': 'public', required: ['name'], additionalProperties: false,
        properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, lei: { ...lei } },
      },
      currency: { ...iso4217, 'x-visibility': 'public' },
      face_value: { ...decimal, 'x-visibility': 'public', description: 'face value of one token unit' },
      issue_date: { type: 'string', format: 'date', 'x-visibility': 'public' },
      maturity_date: { type: 'string', format: 'date', 'x-visibility': 'public' },
      coupon: {
        type: 'object', 'x-visibility': 'public', required: ['rate_bps', 'frequency'], additionalProperties: false,
        properties: {
          rate_bps: { type: 'integer', minimum: 0, maximum: 100_000, description: 'annual coupon in basis points' },
          frequency: { enum: ['annual', 'semi_annual', 'quarterly', 'monthly', 'zero'] },
          day_count: { enum: ['30/360', 'ACT/360', 'ACT/365', 'ACT/ACT'] },
        },
      },
      seniority: { enum: ['senior_secured', 'senior_unsecured', 'subordinated'], 'x-visibility': 'public' },
      rating: { type: 'string', maxLength: 10, 'x-visibility': 'committed' },
      prospectus_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', 'x-visibility': 'committed' },
      paying_agent: { type: 'string', maxLength: 200, 'x-visibility': 'private' },
    }, ['isin', 'issuer', 'currency', 'face_value', 'issue_date', 'maturity_date', 'coupon']),
  },
  {
    id: 'equity_share_class',
    name: 'Equity share class',
    description: 'One class of shares of a company: its rights, nominal value and authorised count.',
    json_schema: doc('Equity share class', {
      company: {
        type: 'object', 'x-visibility': 'public', required: ['name', 'jurisdiction'], additionalProperties: false,
        properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, jurisdiction: { type: 'string', pattern: '^[A-Z]{2}(-[A-Z0-9]{1,3})?$' }, registration_number: { type: 'string', maxLength: 64 } },
      },
      class_name: { type: 'string', minLength: 1, maxLength: 100, 'x-visibility': 'public' },
      isin: { ...isin, 'x-visibility': 'public' },
      nominal_value: { ...decimal, 'x-visibility': 'public' },
      currency: { ...iso4217, 'x-visibility': 'public' },
      votes_per_share: { type: 'integer', minimum: 0, maximum: 1000, 'x-visibility': 'public' },
      dividend_rights: { enum: ['ordinary', 'preferred', 'none'], 'x-visibility': 'public' },
      authorised_shares: { type: 'string', pattern: '^[1-9][0-9]{0,30}$', 'x-visibility': 'public' },
      shareholder_agreement_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', 'x-visibility': 'committed' },
      transfer_restrictions: { type: 'string', maxLength: 2000, 'x-visibility': 'private' },
    }, ['company', 'class_name', 'currency', 'votes_per_share', 'dividend_rights']),
  },
  {
    id: 'fund_unit',
    name: 'Fund unit',
    description: 'A unit of an investment fund with its net asset value per unit and dealing terms.',
    json_schema: doc('Fund unit', {
      fund_name: { type: 'string', minLength: 1, maxLength: 200, 'x-visibility': 'public' },
      isin: { ...isin, 'x-visibility': 'public' },
      manager_lei: { ...lei, 'x-visibility': 'public' },
      currency: { ...iso4217, 'x-visibility': 'public' },
      nav: {
        type: 'object', 'x-visibility': 'public', required: ['per_unit', 'as_of'], additionalProperties: false,
        properties: { per_unit: { ...decimal }, as_of: { type: 'string', format: 'date' } },
      },
      dealing_frequency: { enum: ['daily', 'weekly', 'monthly', 'quarterly'], 'x-visibility': 'public' },
      management_fee_bps: { type: 'integer', minimum: 0, maximum: 10_000, 'x-visibility': 'public' },
      strategy: { type: 'string', maxLength: 2000, 'x-visibility': 'committed' },
      custodian: { type: 'string', maxLength: 200, 'x-visibility': 'private' },
    }, ['fund_name', 'currency', 'nav', 'dealing_frequency']),
  },
  {
    id: 'real_estate_interest',
    name: 'Real-estate interest',
    description: 'A fractional interest in a property: where it is, what share a token is, and its valuation.',
    json_schema: doc('Real-estate interest', {
      property: {
        type: 'object', 'x-visibility': 'public', required: ['country', 'kind'], additionalProperties: false,
        properties: {
          country: { type: 'string', pattern: '^[A-Z]{2}$' }, city: { type: 'string', maxLength: 100 },
          kind: { enum: ['residential', 'commercial', 'industrial', 'land', 'mixed'] }, area_m2: { type: 'number', exclusiveMinimum: 0 },
        },
      },
      land_registry_ref: { type: 'string', maxLength: 100, 'x-visibility': 'committed' },
      address: { type: 'string', maxLength: 300, 'x-visibility': 'private' },
      total_units: { type: 'string', pattern: '^[1-9][0-9]{0,30}$', 'x-visibility': 'public' },
      valuation: {
        type: 'object', 'x-visibility': 'public', required: ['amount', 'currency', 'as_of'], additionalProperties: false,
        properties: { amount: { ...decimal }, currency: { ...iso4217 }, as_of: { type: 'string', format: 'date' }, appraiser: { type: 'string', maxLength: 200, 'x-visibility': 'committed' } },
      },
      spv: {
        type: 'object', 'x-visibility': 'public', required: ['name'], additionalProperties: false,
        properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, lei: { ...lei } },
      },
      title_deed_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', 'x-visibility': 'committed' },
    }, ['property', 'total_units', 'valuation', 'spv']),
  },
];

export function templateOf(id: string): AssetSchemaTemplate | undefined {
  return ASSET_SCHEMA_TEMPLATES.find((t) => t.id === id);
}
