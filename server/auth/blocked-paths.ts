// The closed account-creation paths of the spec: every /api/auth/sign-up*, /api/auth/siwe/verify,
// /api/auth/sign-in/social and /api/auth/callback*, in every method and in every spelling a router
// might treat as the same path. The raw request target is normalised the way lenient routers do
// (percent-decoding until stable, backslashes, repeated slashes, dot segments, matrix parameters,
// case, a trailing slash, the query and fragment) and then matched; anything that normalises onto a
// closed path is blocked, so no spelling reaches a handler that could create an account.

const MAX_DECODE_ROUNDS = 5;

export function normalisePath(rawTarget: string): string {
  let path = rawTarget;
  // an absolute-form target (`GET http://host/path`) names the same path
  path = path.replace(/^[a-z][a-z0-9+.-]*:\/\/[^/]*/i, '');
  path = path.split(/[?#]/, 1)[0] ?? '';
  for (let i = 0; i < MAX_DECODE_ROUNDS; i++) {
    let decoded: string;
    try {
      decoded = decodeURIComponent(path);
    } catch {
      decoded = path.replace(/%([0-9a-f]{2})/gi, (_m, hex: string) => String.fromCharCode(parseInt(hex, 16)));
    }
    if (decoded === path) break;
    path = decoded;
  }
  path = path.split(/[?#]/, 1)[0] ?? '';
  path = path.replace(/\\/g, '/').replace(/[\u0000-\u001f\u007f]/g, '');
  const out: string[] = [];
  for (const rawSegment of path.split('/')) {
    const segment = rawSegment.split(';', 1)[0]!.trim().toLowerCase(); // matrix parameters: /sign-up;x=1
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      out.pop();
      continue;
    }
    out.push(segment);
  }
  return `/${out.join('/')}`;
}

export function isClosedCreationPath(rawTarget: string): boolean {
  const path = normalisePath(rawTarget);
  return (
    /^\/api\/auth\/sign-up/.test(path) ||
    path === '/api/auth/siwe/verify' ||
    path === '/api/auth/sign-in/social' ||
    /^\/api\/auth\/callback/.test(path)
  );
}
