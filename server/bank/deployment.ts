// Which contracts the chain bank talks to (issue 31, class 7): an operator's act, never the bank
// login's alone. A deployment decides where every new intent's tokens go and which vault the game
// and the chain audit read events from.
//   POST /api/operator/chain/deployment  { chainId, token, vault, fromBlock? } (an operator's access
//        JWT): bank.activate_deployment with the operator's live admin session; refused unless the
//        contracts are this role's own chain's (deployment_not_on_chain): the bank would otherwise
//        send to one vault and record another.
// `npm start` in development (no EVM_RPC_URL) activates the local anvil's contracts as the owner
// (bank_private.activate_deployment_as_owner) right after it deployed them: activateLocalDeployment.
import type { Express } from 'express';
import { z } from 'zod';
import { ApiError, zodIssues } from '../http/errors.ts';
import { operatorSession } from '../http/jwt.ts';
import { describeRoute } from '../http/openapi.ts';
import { createOwnerPool } from '../db/pools.ts';
import type { Deployment } from '../chain/types.ts';
import type { BankDeps } from './deposit.ts';
import { isActiveDeployment } from './queries.ts';

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const deploymentBody = z.object({
  chainId: z.number().int().positive(),
  token: z.string().regex(ADDRESS),
  vault: z.string().regex(ADDRESS),
  fromBlock: z.number().int().nonnegative().optional().describe('the first block whose vault events the chain audit reads'),
}).strict();

export const deploymentRoutes = [
  describeRoute({
    method: 'post', path: '/api/operator/chain/deployment', auth: 'admin', summary: 'Activates the contracts the chain bank talks to (an operator\'s act)', body: deploymentBody,
    responses: { 200: '{ id, chainId, token, vault, active, activatedBy }', 400: 'bad_request, invalid_deployment', 403: 'admin_required, admin_session_required', 409: 'deployment_not_on_chain' },
  }),
];

export function installDeploymentRoutes(app: Express, deps: BankDeps) {
  app.post('/api/operator/chain/deployment', deps.jwt.requireAdmin, async (req, res) => {
    const parsed = deploymentBody.safeParse(req.body ?? {});
    if (!parsed.success) throw new ApiError(400, 'bad_request', zodIssues(parsed.error));
    const b = parsed.data;
    const own = deps.chain()?.deployment;
    if (!own || own.chainId !== b.chainId || own.token.toLowerCase() !== b.token.toLowerCase() || own.vault.toLowerCase() !== b.vault.toLowerCase()) {
      throw new ApiError(409, 'deployment_not_on_chain');
    }
    const { rows } = await deps.pool.query('select * from bank.activate_deployment($1, $2, $3, $4, $5)', [
      operatorSession(res), b.chainId, b.token, b.vault, b.fromBlock ?? null,
    ]);
    const d = rows[0];
    deps.log.warn({ adminId: res.locals.claims.sub, deployment: d.id.toString(), vault: d.vault }, 'chain deployment activated by an operator');
    res.json({ id: d.id.toString(), chainId: Number(d.chain_id), token: d.token, vault: d.vault, active: d.active, activatedBy: d.activated_by });
  });
}

/** The owner activates the local chain's contracts (development: `npm start` deployed them just now). */
export async function activateLocalDeployment(ownerUrl: string, deployment: Deployment, rpcUrl: string) {
  const owner = createOwnerPool(ownerUrl, 1);
  try {
    await owner.query('select bank_private.activate_deployment_as_owner($1, $2, $3, $4, 0)', [deployment.chainId, deployment.token, deployment.vault, rpcUrl]);
  } finally {
    await owner.end();
  }
}

/** Whether the active deployment is the one this process talks to (else an operator activates it). */
export async function deploymentIsActive(deps: BankDeps, deployment: Deployment): Promise<boolean> {
  return isActiveDeployment(deps.pool, deployment);
}
