-- The hand end's cost (issue 22): every hand end inserts a history row, so every index on
-- game.hand_histories is paid once per hand. The agents index served no query on its own: the one
-- listing that filters by agent (GET /api/hands?agentId=) also filters by the caller's hands
-- (players @> ...), whose index finds them; the agent filter is then checked on those rows.
drop index game.hand_histories_agents_idx;
