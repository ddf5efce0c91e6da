import type { Logger } from 'pino';
import type { Config, Role } from '../config/index.ts';

/** The base URLs of the roles started in this process, filled in as each one starts. */
export type Peers = Map<Role, string>;

export interface RoleContext {
  config: Config;
  /** The database's URL: its host, port and database (the role's login and password are its own). */
  databaseUrl: string;
  /**
   * The owner's URL when this process may act as the owner (outside a split deployment: the URL the
   * migrations ran with; unset: databaseUrl is the owner's); null with DB_LOGIN_ONLY, where every owner
   * act is the migrator's or an operator's.
   */
  ownerUrl?: string | null;
  log: Logger;
  /** Roles in this process; a role reads it when it calls another (not at its own start). */
  peers?: Peers;
}

export interface StartedRole {
  role: string;
  /** Base URL of an HTTP role. */
  url?: string;
  /** The routes an HTTP role mounts (server/http/app.ts mountedRoutes). */
  routes?(): { method: string; path: string }[];
  stop(): Promise<void>;
}

/** The owner's URL a role may use (null in a login-only process; unset in the context: databaseUrl). */
export function ownerUrlOf(ctx: Pick<RoleContext, 'databaseUrl' | 'ownerUrl'>): string | null {
  return ctx.ownerUrl === undefined ? ctx.databaseUrl : ctx.ownerUrl;
}
