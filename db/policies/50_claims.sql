-- The claim board: the game role reads its catalog and state and writes only through the claims
-- functions (the operator's edits come through the game role's service-key routes); the admin
-- reads through row-level security; nobody else sees a row.
revoke all on schema claims, claims_private from public;
revoke all on all tables in schema claims, claims_private from public;
revoke all on all functions in schema claims, claims_private from public;
revoke all on all tables in schema claims, claims_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
revoke all on all functions in schema claims, claims_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
alter default privileges in schema claims, claims_private revoke execute on functions from public;

grant usage on schema claims to poker_game, poker_admin, poker_anonymous;
grant select on claims.claim_sections, claims.settings, claims.user_claim_sections, claims.claim_ledger, claims.claim_intents, claims.condition_events,
  claims.catalog_edits
  to poker_game, poker_admin, poker_anonymous;
grant execute on function
  claims.iso_week(timestamptz),
  claims.resolved_sections(text),
  claims.board_settings(text),
  claims.set_board_settings(uuid, text, boolean, boolean),
  claims.create_section(uuid, text, jsonb),
  claims.patch_section(uuid, text, text, jsonb),
  claims.delete_section(uuid, text, text),
  claims.board(text, uuid, timestamptz),
  claims.mark_condition_met(text, uuid, text, text),
  claims.credit_claim(text, uuid, text, timestamptz, jsonb)
  to poker_game;

do $$
declare
  t text;
begin
  foreach t in array array['claim_sections', 'settings', 'user_claim_sections', 'claim_ledger', 'claim_intents', 'condition_events', 'catalog_edits'] loop
    execute format('drop policy if exists %I on claims.%I', t || '_read', t);
    execute format('create policy %I on claims.%I for select to poker_game, poker_admin using (true)', t || '_read', t);
  end loop;
end;
$$;

-- the agent registry (game schema)
grant select on game.agents, game.agent_versions, game.agent_flags to poker_game, poker_admin, poker_anonymous;
grant execute on function
  game.create_agent(uuid, text),
  game.publish_agent_version(uuid, uuid, jsonb),
  game.flag_agent_decision(uuid, uuid, text, text),
  game.set_seat_agent(text, uuid, uuid)
  to poker_game;
drop policy if exists agents_read on game.agents;
create policy agents_read on game.agents for select to poker_game, poker_admin using (true);
drop policy if exists agent_versions_read on game.agent_versions;
create policy agent_versions_read on game.agent_versions for select to poker_game, poker_admin using (true);
drop policy if exists agent_flags_read on game.agent_flags;
create policy agent_flags_read on game.agent_flags for select to poker_game, poker_admin using (true);

-- the worker completes claims whose grant minted but whose ledger row never came
grant usage on schema claims to poker_worker;
