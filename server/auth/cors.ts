// CORS for the auth role's browser calls (sign-in, session, token, wallet links): a page served from
// a trusted origin may call with credentials (the session cookie); nobody else gets CORS headers.
//   a request with a trusted Origin    -> Access-Control-Allow-Origin: <that origin>, credentials true
//   a preflight from a trusted origin  -> 204 with the allowed methods and headers (cached 10 min)
//   a preflight from any other origin  -> 403 { error: 'untrusted_origin' }, no CORS headers
// Trusted origins: the auth role's own, AUTH_TRUSTED_ORIGINS, and in development the URLs `npm start`
// prints (server/auth/config.ts); never those in production.
import type { RequestHandler } from 'express';
import type { AuthSettings } from './config.ts';

const METHODS = 'GET, POST, DELETE, OPTIONS';
const HEADERS = ['content-type', 'authorization'];

export function corsForTrustedOrigins(settings: AuthSettings): RequestHandler {
  return (req, res, next) => {
    const origin = req.get('origin');
    const trusted = origin !== undefined && settings.trustedOrigins.has(origin);
    res.vary('Origin');
    const preflight = req.method === 'OPTIONS' && req.get('access-control-request-method') !== undefined;
    if (!trusted) {
      if (preflight) return void res.status(403).json({ error: 'untrusted_origin' });
      return next();
    }
    res.set('access-control-allow-origin', origin);
    res.set('access-control-allow-credentials', 'true');
    if (!preflight) return next();
    const asked = (req.get('access-control-request-headers') ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
    res.set('access-control-allow-methods', METHODS);
    res.set('access-control-allow-headers', [...new Set([...HEADERS, ...asked.filter((h) => HEADERS.includes(h))])].join(', '));
    res.set('access-control-max-age', '600');
    res.status(204).end();
  };
}
