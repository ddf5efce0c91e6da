// A real local OIDC issuer for tests: RS256 keys, a JWKS served over HTTP on an ephemeral port,
// and ID tokens signed like a provider's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type JWTPayload } from 'jose';

export interface LocalIssuer {
  issuer: string;
  jwksUrl: string;
  audience: string;
  idToken(claims: JWTPayload & { sub: string }, options?: { audience?: string; issuer?: string; expiresIn?: string; foreignKey?: boolean }): Promise<string>;
  close(): Promise<void>;
}

export async function startLocalIssuer(audience = 'poker-web-client'): Promise<LocalIssuer> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  const foreign = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'idp-key-1', alg: 'RS256', use: 'sig' };
  const server: Server = createServer((req, res) => {
    if (req.url === '/.well-known/jwks.json') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    } else res.writeHead(404).end();
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer: base,
    jwksUrl: `${base}/.well-known/jwks.json`,
    audience,
    idToken: (claims, options = {}) =>
      new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256', kid: 'idp-key-1' })
        .setIssuer(options.issuer ?? base)
        .setAudience(options.audience ?? audience)
        .setIssuedAt()
        .setExpirationTime(options.expiresIn ?? '10m')
        .sign(options.foreignKey ? foreign.privateKey : privateKey),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
