const LOOPBACK_NAMES = new Set(['localhost', '::1']);

/**
 * Whether a request's `Host` header names this provider: a loopback name or address (`localhost`,
 * `127.x.x.x`, `[::1]`) or the host it was bound to, with the port the request came in on (80 when
 * the header has none). Anything else, a missing header included, is refused, so that a web page
 * whose DNS name was rebound to 127.0.0.1 cannot drive the provider from a browser.
 */
export function hostAllowed(header: string | undefined, boundHost: string, localPort: number): boolean {
  if (header === undefined) return false;
  const match = /^(?:\[([^\]]+)\]|([^:[\]]+))(?::(\d{1,5}))?$/.exec(header.trim().toLowerCase());
  if (match === null) return false;
  const name = (match[1] ?? match[2]) as string;
  const port = match[3] === undefined ? 80 : Number(match[3]);
  if (port !== localPort) return false;
  return (
    LOOPBACK_NAMES.has(name) ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name) ||
    name === boundHost.toLowerCase().replace(/^\[(.*)\]$/, '$1')
  );
}
