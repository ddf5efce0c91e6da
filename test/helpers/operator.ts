// An operator of the platform, as an operator gets one: an admin made with the owner's connection
// (what `npm run admin:create` does), signed in on the auth role with email and password, and the
// access JWT its session mints (the only path that carries `role: 'admin'`). Tests and benchmarks.
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { hashPassword } from '../../server/auth/passwords.ts';

export interface Operator {
  adminId: string;
  auth: Record<string, string>;
}

async function post(url: string, init: { method?: string; headers?: Record<string, string>; body?: unknown }) {
  const res = await fetch(url, {
    method: init.method ?? 'POST',
    headers: { ...(init.body === undefined ? {} : { 'content-type': 'application/json' }), ...init.headers },
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  return { status: res.status, body: (await res.json().catch(() => undefined)) as { token?: string } | undefined };
}

export async function signInOperator(owner: pg.Pool, authUrl: string): Promise<Operator> {
  const email = `ops-${randomUUID().slice(0, 8)}@example.com`;
  const password = `operator-${randomUUID()}`;
  const { rows } = await owner.query<{ id: string }>('select auth.create_admin($1, $2) as id', [email, await hashPassword(password)]);
  const session = await post(`${authUrl}/api/auth/sign-in/email`, { body: { email, password } });
  if (session.status !== 200 || !session.body?.token) throw new Error(`operator sign-in failed: ${session.status} ${JSON.stringify(session.body)}`);
  const token = await post(`${authUrl}/api/auth/token`, { method: 'GET', headers: { authorization: `Bearer ${session.body.token}` } });
  if (token.status !== 200 || !token.body?.token) throw new Error(`operator token failed: ${token.status} ${JSON.stringify(token.body)}`);
  return { adminId: rows[0]!.id, auth: { authorization: `Bearer ${token.body.token}` } };
}
