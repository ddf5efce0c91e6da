// Routes of the bank's interface the cage does not serve yet: 501 `not_yet_cage` naming the phase
// (the issue) that lands them, never a 404, so a client switched from the chain bank learns what
// is missing and when it comes.
import type { Express } from 'express';
import { describeRoute } from '../http/openapi.ts';

export const PENDING_ROUTES: { method: 'get' | 'post' | 'all'; path: string; phase: string }[] = [
  { method: 'post', path: '/settlement/settle', phase: 'settlement' },
  { method: 'post', path: '/api/operator/seat', phase: 'operator-seating' },
  { method: 'post', path: '/api/house/seat', phase: 'house-seating' },
];

/** The contracts of installNotYetRoutes: each answers 501 not_yet_cage. */
export const notYetRoutes = PENDING_ROUTES.map((route) => describeRoute({
  method: route.method, path: route.path, auth: 'none', summary: `Not served by the cage yet (phase ${route.phase})`,
  responses: { 501: `not_yet_cage, with phase: ${route.phase}` },
}));

export function installNotYetRoutes(app: Express) {
  for (const route of PENDING_ROUTES) {
    app[route.method](route.path, (_req, res) => {
      res.status(501).json({ error: 'not_yet_cage', phase: route.phase });
    });
  }
}
