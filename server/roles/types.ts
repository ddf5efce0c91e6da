import type { Logger } from 'pino';
import type { Config, Role } from '../config/index.ts';

/** The base URLs of the roles started in this process, filled in as each one starts. */
export type Peers = Map<Role, string>;

export interface RoleContext {
  config: Config;
  databaseUrl: string;
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
