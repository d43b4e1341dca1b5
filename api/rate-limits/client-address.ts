// The client address a request is counted under (docs/operations.md "Rate limits"). Behind a trusted
// proxy `req.ip` is the address the proxy saw (API_TRUST_PROXY); without one it is the peer's.
import ipaddr from 'ipaddr.js';

/**
 * An IPv4 address as is (an IPv4-mapped IPv6 address as its IPv4), an IPv6 address by its /64, the
 * smallest block one subscriber is usually given, so a client cannot step around a limit by changing
 * its interface identifier. Anything unparsable is counted as given.
 */
export function clientAddressKey(ip: string): string {
  if (!ipaddr.isValid(ip)) return ip;
  const a = ipaddr.process(ip);
  if (a.kind() === 'ipv4') return a.toString();
  const parts = (a as ipaddr.IPv6).parts.slice(0, 4);
  return `${new ipaddr.IPv6([...parts, 0, 0, 0, 0]).toString()}/64`;
}
