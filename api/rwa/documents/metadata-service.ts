// Token metadata (docs/platform/rwa.md "Documents and metadata"): the ERC-721 / ERC-1155 metadata JSON
// documents (name, description, image, attributes; ERC-1155's `{id}` substitution), the placeholder shown
// before reveal, the ERC-7572 contract-level document, the token's instances read from the chain's mint
// events, and its relationships to other tokens checked against the records and the chain. The content
// comes from the token record and its public fields (token-fields-reader.ts), by the field paths below.
import { getAddress, parseAbiItem } from 'viem';
import { CustodyError } from '../../../core/errors/custody-error.ts';
import type { Scope } from '../../tenancy/scope.ts';
import type { TokenService } from '../../tokenization/token-service.ts';
import type { TokenChain } from '../../tokenization/token-chain.ts';
import type { TokenRecord } from '../../tokenization/records.ts';
import type { FieldValue, TokenFieldsReader } from './token-fields-reader.ts';

/** Field paths metadata reads; every other public field is an attribute. */
export const METADATA_FIELDS = {
  description: 'metadata.description',
  image: 'metadata.image',
  externalUrl: 'metadata.external_url',
  bannerImage: 'metadata.banner_image',
  featuredImage: 'metadata.featured_image',
  revealed: 'metadata.revealed',
  placeholderName: 'metadata.placeholder.name',
  placeholderDescription: 'metadata.placeholder.description',
  placeholderImage: 'metadata.placeholder.image',
  relationships: 'relationships',
} as const;

export const RELATIONS = ['parent', 'child', 'share_class'] as const;
export type Relation = (typeof RELATIONS)[number];
const RECIPROCAL: Record<Relation, Relation> = { parent: 'child', child: 'parent', share_class: 'share_class' };

const TRANSFER = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)');
const TRANSFER_SINGLE = parseAbiItem('event TransferSingle(address indexed operator, address indexed from, address indexed to, uint256 id, uint256 value)');
const TRANSFER_BATCH = parseAbiItem('event TransferBatch(address indexed operator, address indexed from, address indexed to, uint256[] ids, uint256[] values)');

const invalid = (field: string, why: string) => new CustodyError('validation_failed', `${field}: ${why}`);
const str = (v: FieldValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);

/** A token id as a path segment: decimal, or ERC-1155's 64 hex digits (the `{id}` form); at most 2^256 - 1. */
export function parseTokenId(s: string): bigint {
  let id: bigint | undefined;
  if (/^(0|[1-9][0-9]{0,77})$/.test(s)) id = BigInt(s);
  else if (/^(0x)?[0-9a-fA-F]{64}$/.test(s)) id = BigInt(s.startsWith('0x') ? s : `0x${s}`);
  if (id === undefined || id >= 1n << 256n) throw invalid('tokenId', 'a decimal token id, or 64 hex digits');
  return id;
}

/** ERC-1155's `{id}`: the id as 64 lower-case hex digits, no 0x. */
export function erc1155IdHex(id: bigint): string {
  return id.toString(16).padStart(64, '0');
}

type Attribute = { trait_type: string; value: string | number | boolean | null };
/** ERC-721 / ERC-1155 metadata JSON. */
export interface MetadataDoc { name: string; description: string | null; image: string | null; attributes: Attribute[]; external_url?: string; decimals?: number }
/** ERC-7572 contract-level metadata. */
export interface ContractDoc {
  name: string; symbol?: string; description?: string; image?: string; banner_image?: string; featured_image?: string; external_link?: string; collaborators: string[];
}

export class MetadataService {
  constructor(private readonly o: { tokens: TokenService; fields: TokenFieldsReader; chain: (name: string) => TokenChain | undefined }) {}

  private async load(scope: Scope, id: string): Promise<{ token: TokenRecord; f: Record<string, FieldValue> }> {
    const token = await this.o.tokens.get(scope, id);
    return { token, f: await this.o.fields.publicFields(scope, token.id) };
  }

  private nft(token: TokenRecord): void {
    if (token.kind === 'erc20') throw invalid('id', `token ${token.id} is an ERC-20: it has no per-token metadata or instances`);
  }

  /** The token's public fields other than the ones metadata reads, as `attributes` (ERC-721 / OpenSea form). */
  private attributes(f: Record<string, FieldValue>): Attribute[] {
    return Object.keys(f).filter((k) => !k.startsWith('metadata.') && k !== METADATA_FIELDS.relationships && k !== 'relationships' && !k.startsWith('relationships.')).sort()
      .map((k) => ({ trait_type: k, value: typeof f[k] === 'object' && f[k] !== null ? JSON.stringify(f[k]) : f[k] as string | number | boolean | null }));
  }

  /** The token-level document: what every instance shares, the token URI convention, and whether it is revealed. */
  async metadata(scope: Scope, id: string) {
    const { token, f } = await this.load(scope, id);
    return {
      token_id: token.id, kind: token.kind, chain: token.chain, address: token.address,
      name: token.name, symbol: token.symbol, description: str(f[METADATA_FIELDS.description]) ?? null, image: str(f[METADATA_FIELDS.image]) ?? null,
      external_url: str(f[METADATA_FIELDS.externalUrl]) ?? null, attributes: this.attributes(f), revealed: f[METADATA_FIELDS.revealed] === true,
      // ERC-721's tokenURI is base_uri + the decimal id; ERC-1155's uri has `{id}` replaced by 64 hex digits by the client.
      token_uri_template: token.kind === 'erc721' ? (token.base_uri ?? '') + '{decimal id}' : token.kind === 'erc1155' ? token.uri : null,
    };
  }

  /** The document shown for every instance before the token is revealed. */
  async placeholder(scope: Scope, id: string) {
    const { token, f } = await this.load(scope, id);
    return this.placeholderOf(token, f);
  }

  private placeholderOf(token: TokenRecord, f: Record<string, FieldValue>) {
    return {
      name: str(f[METADATA_FIELDS.placeholderName]) ?? token.name ?? token.id,
      description: str(f[METADATA_FIELDS.placeholderDescription]) ?? 'Not revealed yet.',
      image: str(f[METADATA_FIELDS.placeholderImage]) ?? null,
      attributes: [] as Attribute[],
    };
  }

  /**
   * One instance's metadata JSON (ERC-721 "Metadata JSON Schema", ERC-1155 "Metadata"): before reveal the
   * placeholder; for ERC-1155 every `{id}` in a string value replaced by the id's 64 hex digits.
   */
  async instanceMetadata(scope: Scope, id: string, tokenIdParam: string): Promise<MetadataDoc> {
    const { token, f } = await this.load(scope, id);
    this.nft(token);
    const tokenId = parseTokenId(tokenIdParam);
    const sub = (s: string | null) => (s !== null && token.kind === 'erc1155' ? s.replaceAll('{id}', erc1155IdHex(tokenId)) : s);
    if (f[METADATA_FIELDS.revealed] !== true) {
      const p = this.placeholderOf(token, f);
      return { ...p, name: `${p.name} #${tokenId}`, image: sub(p.image) };
    }
    const doc: MetadataDoc = {
      name: `${token.name ?? token.id} #${tokenId}`,
      description: sub(str(f[METADATA_FIELDS.description]) ?? null),
      image: sub(str(f[METADATA_FIELDS.image]) ?? null),
      attributes: this.attributes(f).map((a) => ({ ...a, value: typeof a.value === 'string' ? sub(a.value) : a.value })),
    };
    const ext = str(f[METADATA_FIELDS.externalUrl]);
    if (ext) doc.external_url = sub(ext) ?? ext;
    if (token.kind === 'erc1155') doc.decimals = 0;
    return doc;
  }

  /** ERC-7572's contractURI document for the token's contract. */
  async contractMetadata(scope: Scope, id: string): Promise<ContractDoc> {
    const { token, f } = await this.load(scope, id);
    const doc: ContractDoc = { name: token.name ?? token.id, collaborators: [] };
    if (token.symbol) doc.symbol = token.symbol;
    const put = (k: 'description' | 'image' | 'banner_image' | 'featured_image' | 'external_link', path: string) => { const v = str(f[path]); if (v) doc[k] = v; };
    put('description', METADATA_FIELDS.description);
    put('image', METADATA_FIELDS.image);
    put('banner_image', METADATA_FIELDS.bannerImage);
    put('featured_image', METADATA_FIELDS.featuredImage);
    put('external_link', METADATA_FIELDS.externalUrl);
    // The admin Safe governs the contract: the one collaborator.
    doc.collaborators = [getAddress(token.safe)];
    return doc;
  }

  private chainOf(token: TokenRecord): TokenChain {
    const c = this.o.chain(token.chain);
    if (!c) throw new CustodyError('unavailable', `tokenization does not run on ${token.chain} here; its chain cannot be read`);
    return c;
  }

  /** The ids minted (Transfer / TransferSingle / TransferBatch from the zero address), read from the chain's logs. */
  async instances(scope: Scope, id: string) {
    const token = await this.o.tokens.get(scope, id);
    this.nft(token);
    if (token.status !== 'deployed') throw new CustodyError('conflict', `token ${token.id} is not deployed yet`);
    const { client } = this.chainOf(token);
    const address = getAddress(token.address);
    // viem caches the block number for its polling interval; a read right after a mint must see it.
    const block = await client.getBlockNumber({ cacheTime: 0 });
    const minted = new Map<bigint, bigint>();
    const burned = new Map<bigint, bigint>();
    const add = (m: Map<bigint, bigint>, k: bigint, v: bigint) => m.set(k, (m.get(k) ?? 0n) + v);
    if (token.kind === 'erc721') {
      const mints = await client.getLogs({ address, event: TRANSFER, args: { from: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n, toBlock: block });
      for (const l of mints) add(minted, l.args.tokenId!, 1n);
      const burns = await client.getLogs({ address, event: TRANSFER, args: { to: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n, toBlock: block });
      for (const l of burns) add(burned, l.args.tokenId!, 1n);
    } else {
      for (const [dir, arg] of [[minted, 'from'], [burned, 'to']] as const) {
        const singles = await client.getLogs({ address, event: TRANSFER_SINGLE, args: { [arg]: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n, toBlock: block });
        for (const l of singles) add(dir, l.args.id!, l.args.value!);
        const batches = await client.getLogs({ address, event: TRANSFER_BATCH, args: { [arg]: '0x0000000000000000000000000000000000000000' }, fromBlock: 0n, toBlock: block });
        for (const l of batches) l.args.ids!.forEach((x, i) => add(dir, x, l.args.values![i]!));
      }
    }
    const ids = [...minted.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    return {
      token_id: token.id, kind: token.kind, chain: token.chain, address: token.address, block: block.toString(),
      data: ids.map((x) => ({
        token_id: x.toString(), token_id_hex: erc1155IdHex(x), minted: minted.get(x)!.toString(), burned: (burned.get(x) ?? 0n).toString(),
        supply: (minted.get(x)! - (burned.get(x) ?? 0n)).toString(),
      })),
    };
  }

  /**
   * The token's declared relationships (field `relationships`: a list of `{ relation, token_id }`), each
   * checked: the other token exists in this workspace, is on the same chain, is deployed with code at its
   * address (read from the chain where it runs here), and declares the reciprocal relation back.
   */
  async relationships(scope: Scope, id: string) {
    const { token, f } = await this.load(scope, id);
    const declared = declaredRelations(f[METADATA_FIELDS.relationships]);
    const code = async (t: TokenRecord): Promise<boolean | null> => {
      const c = this.o.chain(t.chain);
      if (!c || t.status !== 'deployed') return t.status === 'deployed' ? null : false;
      const bytes = await c.client.getCode({ address: getAddress(t.address) });
      return bytes !== undefined && bytes !== '0x';
    };
    const selfOnChain = await code(token);
    const data = [];
    for (const r of declared) {
      const other = await this.o.tokens.get(scope, r.token_id).catch(() => undefined);
      const back = other ? declaredRelations((await this.o.fields.publicFields(scope, other.id))[METADATA_FIELDS.relationships]) : [];
      const checks = {
        exists: other !== undefined,
        same_chain: other ? other.chain === token.chain : false,
        on_chain: other ? await code(other) : false,
        reciprocal: back.some((b) => b.token_id === token.id && b.relation === RECIPROCAL[r.relation]),
      };
      data.push({
        relation: r.relation, token_id: r.token_id, chain: other?.chain ?? null, address: other?.address ?? null, kind: other?.kind ?? null, checks,
        consistent: checks.exists && checks.same_chain && checks.on_chain !== false && selfOnChain !== false && checks.reciprocal,
      });
    }
    return { token_id: token.id, chain: token.chain, on_chain: selfOnChain, data };
  }
}

/** The relationships a field value declares; a malformed entry is left out (the schema validates the field). */
export function declaredRelations(v: FieldValue | undefined): { relation: Relation; token_id: string }[] {
  if (!Array.isArray(v)) return [];
  const out: { relation: Relation; token_id: string }[] = [];
  for (const e of v) {
    if (typeof e !== 'object' || e === null || Array.isArray(e)) continue;
    const relation = e.relation;
    const tokenId = e.token_id;
    if (typeof relation === 'string' && (RELATIONS as readonly string[]).includes(relation) && typeof tokenId === 'string') out.push({ relation: relation as Relation, token_id: tokenId });
  }
  return out;
}
