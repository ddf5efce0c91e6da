import type { Logger } from 'pino';
import type { Config } from '../config/index.ts';

export interface RoleContext {
  config: Config;
  databaseUrl: string;
  log: Logger;
}

export interface StartedRole {
  role: string;
  /** Base URL of an HTTP role. */
  url?: string;
  stop(): Promise<void>;
}
