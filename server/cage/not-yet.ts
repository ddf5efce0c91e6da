// Routes of the bank's interface the cage does not serve yet: 501 `not_yet_cage` naming the phase
// (the issue) that lands them, never a 404, so a client switched from the chain bank learns what
// is missing and when it comes.
import type { Express } from 'express';

export const PENDING_ROUTES: { method: 'get' | 'post' | 'all'; path: string; phase: string }[] = [
  { method: 'post', path: '/settlement/settle', phase: 'settlement' },
  { method: 'post', path: '/api/operator/seat', phase: 'operator-seating' },
  { method: 'post', path: '/api/house/seat', phase: 'house-seating' },
];

export function installNotYetRoutes(app: Express) {
  for (const route of PENDING_ROUTES) {
    app[route.method](route.path, (_req, res) => {
      res.status(501).json({ error: 'not_yet_cage', phase: route.phase });
    });
  }
}
