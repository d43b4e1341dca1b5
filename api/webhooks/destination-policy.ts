// Where webhook requests may go (docs/security.md "Webhook destinations (SSRF)"). A destination is
// allowed when it is https and every address its name resolves to is public unicast, or when it matches
// an entry of the operator's allow-list (API_WEBHOOK_ALLOWED_DESTINATIONS; empty in production), which
// admits that host or range on any scheme. Address classes come from ipaddr.js; only its plain
// `unicast` class counts as public (for IPv6, inside 2000::/3 as well), so loopback, private, link-local
// (cloud metadata), CGNAT, unspecified, multicast, reserved, IPv4-mapped/translated/6to4/Teredo forms
// and anything unclassified are refused. The rule that holds is `allowsAddress`, applied by the
// outbound client (outbound-http.ts) to the resolved address it is about to connect to; `checkUrl` is
// the early refusal at registration and before a request.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** The scheme, name and port a request is for (the name without IPv6 brackets, lower case). */
export interface Destination {
  protocol: string;
  hostname: string;
  port: number;
}

type Entry =
  | { kind: 'host'; host: string; port: number | null; text: string }
  | { kind: 'range'; range: [Address, number]; port: number | null; text: string };

const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR('2000::/3');

/** Parses an IP literal (IPv4-mapped IPv6 becomes IPv4); undefined for anything that is not one. */
export function parseAddress(text: string): Address | undefined {
  const bare = text.replace(/^\[(.*)\]$/, '$1');
  if (!isIP(bare.replace(/%.*$/, ''))) return undefined;
  try {
    return ipaddr.process(bare);
  } catch {
    return undefined;
  }
}

function unmapped(a: Address): Address {
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}

/** True only for public unicast addresses: what a customer's webhook receiver may resolve to. */
export function isPublicAddress(address: string | Address): boolean {
  const parsed = typeof address === 'string' ? parseAddress(address) : address;
  if (!parsed) return false;
  const a = unmapped(parsed);
  if (a.kind() === 'ipv4') return a.range() === 'unicast';
  const v6 = a as ipaddr.IPv6;
  return v6.range() === 'unicast' && v6.match(GLOBAL_UNICAST_V6);
}

/** Lower case, no brackets, no trailing dot. */
export function normalizeHostname(hostname: string): string {
  return hostname.replace(/^\[(.*)\]$/, '$1').replace(/\.$/, '').toLowerCase();
}

/** The port a URL goes to (its default when none is written). */
export function portOf(u: URL): number {
  return u.port ? Number(u.port) : u.protocol === 'https:' ? 443 : 80;
}

/** Names that always mean this machine (RFC 6761). */
function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

const HOSTNAME = /^(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

function parseEntry(raw: string): Entry {
  const text = raw.trim();
  if (text.includes('/')) {
    const [addr, bits] = text.split('/');
    const a = parseAddress(addr!);
    if (!a || !/^\d{1,3}$/.test(bits!) || Number(bits) > (a.kind() === 'ipv4' ? 32 : 128)) throw new Error(`not a CIDR range: ${text}`);
    return { kind: 'range', range: [a, Number(bits)], port: null, text };
  }
  let host = text;
  let port: number | null = null;
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  if (m) {
    host = m[1]!;
    port = Number(m[2]);
    if (port < 1 || port > 65535) throw new Error(`port out of range: ${text}`);
  }
  const a = parseAddress(host);
  if (a) return { kind: 'range', range: [a, a.kind() === 'ipv4' ? 32 : 128], port, text };
  const name = normalizeHostname(host);
  if (!HOSTNAME.test(name)) throw new Error(`not an address, range or host name: ${text}`);
  return { kind: 'host', host: name, port, text };
}

function inRange(a: Address, [base, bits]: [Address, number]): boolean {
  return a.kind() === base.kind() && a.match(base, bits);
}

/** One of the service's own addresses: a name or an address, and its port. */
interface SelfEntry { host: string; address: Address | undefined; port: number }

const SELF_REFUSAL = 'url must not point to this service (the API, its coordinator or its operator API)';

/** Reads `host:port`, `[v6]:port` or an origin (`https://api.example.com`) into a self entry. */
function parseSelf(raw: string): SelfEntry {
  const text = raw.trim();
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    const u = new URL(text);
    const host = normalizeHostname(u.hostname);
    return { host, address: parseAddress(host), port: portOf(u) };
  }
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  if (!m) throw new Error(`not host:port or an origin: ${text}`);
  const host = normalizeHostname(m[1]!);
  return { host, address: parseAddress(host), port: Number(m[2]) };
}

/** Does `a` reach the listener `e` (a wildcard or localhost listener is reached on loopback)? */
function reachesSelf(e: SelfEntry, a: Address): boolean {
  const local = a.range() === 'loopback' || a.range() === 'unspecified';
  if (e.address) return e.address.range() === 'unspecified' ? local : unmapped(e.address).toString() === a.toString();
  return isLocalhostName(e.host) && local;
}

export class DestinationPolicy {
  /** No allow-list: https to public addresses only (production). */
  static readonly STRICT = new DestinationPolicy([]);

  private constructor(private readonly entries: readonly Entry[], private readonly self: readonly SelfEntry[] = []) {}

  /**
   * The same policy that also refuses the service's own addresses (`host:port` or origins: the API's
   * listen address and public URL, the coordinator, the operator API), whatever the allow-list admits.
   */
  withSelf(addresses: readonly string[]): DestinationPolicy {
    return new DestinationPolicy(this.entries, [...this.self, ...addresses.filter((x) => x.trim()).map(parseSelf)]);
  }

  /** Is `dest` (by name and port, or by the address it resolved to and port) one of the service's own? */
  isSelf(dest: Destination, address?: string): boolean {
    const name = normalizeHostname(dest.hostname);
    if (address === undefined && isLocalhostName(name)) return this.isSelf(dest, '127.0.0.1') || this.isSelf(dest, '::1');
    const parsed = parseAddress(address ?? name);
    const a = parsed ? unmapped(parsed) : undefined;
    return this.self.some((e) => e.port === dest.port && (e.host === name || (a !== undefined && reachesSelf(e, a))));
  }

  /**
   * The policy for an allow-list setting: entries are IP addresses (`127.0.0.1`, `::1`), CIDR ranges
   * (`10.0.0.0/8`), host names (`localhost`), each address or name optionally with a port
   * (`localhost:8443`, `[::1]:8443`). Throws on an entry it cannot read.
   */
  static fromAllowList(entries: readonly string[]): DestinationPolicy {
    const parsed: Entry[] = [];
    const bad: string[] = [];
    for (const e of entries.map((x) => x.trim()).filter(Boolean)) {
      try {
        parsed.push(parseEntry(e));
      } catch (err) {
        bad.push((err as Error).message);
      }
    }
    if (bad.length) throw new Error(bad.join('; '));
    return parsed.length ? new DestinationPolicy(parsed) : DestinationPolicy.STRICT;
  }

  /** The allow-list as configured (empty in production). */
  get allowList(): string[] {
    return this.entries.map((e) => e.text);
  }

  private listed(dest: Destination, address: Address | undefined): boolean {
    return this.entries.some((e) => (e.port === null || e.port === dest.port)
      && (e.kind === 'host' ? e.host === normalizeHostname(dest.hostname) : address !== undefined && inRange(address, e.range)));
  }

  /**
   * Connect-time rule: may a connection for `dest` go to `address` (what the name resolved to, or the
   * literal)? Allow-listed: any scheme and address. Otherwise https and a public address only.
   */
  allowsAddress(dest: Destination, address: string): boolean {
    const parsed = parseAddress(address);
    if (!parsed) return false;
    const a = unmapped(parsed);
    if (this.isSelf(dest, a.toString())) return false;
    if (this.listed(dest, a)) return true;
    return dest.protocol === 'https:' && isPublicAddress(a);
  }

  /**
   * The refusals that need no DNS: a scheme other than http(s), plain http to anything not
   * allow-listed, a literal address that is not public, a name for this machine. Returns the reason
   * (a sentence about `url`) or null. Names pass here and are checked when resolved, at connect time.
   */
  checkUrl(url: string | URL): string | null {
    let u: URL;
    try {
      u = typeof url === 'string' ? new URL(url) : url;
    } catch {
      return 'url must be an absolute URL';
    }
    if (u.protocol !== 'https:' && u.protocol !== 'http:') return 'url must use https';
    const dest: Destination = { protocol: u.protocol, hostname: normalizeHostname(u.hostname), port: portOf(u) };
    if (this.isSelf(dest)) return SELF_REFUSAL;
    const literal = parseAddress(dest.hostname);
    if (literal) {
      if (this.allowsAddress(dest, dest.hostname)) return null;
      return isPublicAddress(literal) ? 'url must use https' : 'url must point to a public address (loopback, private, link-local and other non-public addresses are refused)';
    }
    if (this.listed(dest, undefined)) return null;
    if (isLocalhostName(dest.hostname)) {
      return this.allowsAddress(dest, '127.0.0.1') || this.allowsAddress(dest, '::1') ? null : 'url must point to a public address (loopback, private, link-local and other non-public addresses are refused)';
    }
    // A name over plain http can only be allowed by an address range it may resolve into.
    if (dest.protocol === 'http:' && !this.entries.some((e) => e.kind === 'range' && (e.port === null || e.port === dest.port))) return 'url must use https';
    return null;
  }
}
