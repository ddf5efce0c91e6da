-- The refusal registry (poker_refusals): its table and its refuse() are the owner's alone. Every
-- domain's refuse() wrapper runs inside the owner's security definer functions; no service role
-- reads the registry or calls its function directly.
revoke all on schema poker_refusals from public;
revoke all on all tables in schema poker_refusals from public;
revoke all on all functions in schema poker_refusals from public;
revoke all on all tables in schema poker_refusals from poker_cage, poker_auth, poker_game, poker_worker, poker_betting, poker_bank, poker_admin, poker_anonymous, poker_graphql;
revoke all on all functions in schema poker_refusals from poker_cage, poker_auth, poker_game, poker_worker, poker_betting, poker_bank, poker_admin, poker_anonymous, poker_graphql;
alter default privileges in schema poker_refusals revoke execute on functions from public;
