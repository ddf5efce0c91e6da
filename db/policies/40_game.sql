-- The game side: the game role reads its tables and writes only through the game functions; the
-- cage role creates tables (the bank's POST /api/tables) and reads some columns of the table
-- records' view; the admin reads through row-level security; nobody else sees a row.
revoke all on schema game, game_private from public;
revoke all on all tables in schema game, game_private from public;
revoke all on all functions in schema game, game_private from public;
revoke all on all tables in schema game, game_private from poker_cage, poker_auth, poker_game, poker_worker, poker_bank, poker_admin, poker_anonymous;
revoke all on all functions in schema game, game_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
alter default privileges in schema game, game_private revoke execute on functions from public;

grant usage on schema game to poker_game, poker_cage, poker_admin, poker_anonymous;

grant select on game.tables, game.table_players, game.position_links, game.seat_credits, game.hand_histories, game.rake_rows to poker_game;
grant execute on function
  game.credit_seat(text, text, uuid, integer, bigint),
  game.cancel_credit(text, text, uuid, bigint),
  game.stand_up(text, uuid),
  game.stand_up_busted(text, uuid),
  game.stand_up_idle(text, uuid),
  game.set_sitting_out(text, uuid, boolean, bigint),
  game.idle_players(text),
  game.settle_seat(bigint, text, text),
  game.deal_hand(text, text, bigint, jsonb, jsonb),
  game.open_deals(text, bigint),
  game.commit_deal(text, bigint, jsonb),
  game.reveal_abandoned(text, text, bigint, jsonb, text, text, text),
  game.seats_of(text),
  game.end_hand(text, text, bigint, jsonb, bigint, integer, bytea, jsonb, uuid[], timestamptz, bigint, jsonb, text, text, text),
  -- a group commit's batch of the two above in one call (each written by them, with their checks)
  game.write_boundaries(text[], text[], bigint[], jsonb[], bigint[], integer[], bytea[], jsonb[], text[], timestamptz[], bigint[], jsonb[], text[], text[], text[], text[], text[], bigint[], jsonb[], jsonb[]),
  game.hand_for_player(text, uuid),
  game.abandon_hand(text, bigint),
  game.release_hand(text, text, bigint),
  game.register_process(text, text),
  game.set_process_url(text),
  game.unregister_process(),
  game.take_lease(text, integer),
  game.renew_leases(text[], bigint[], integer),
  game.release_lease(text, bigint),
  game.recover_interrupted_hands(),
  -- the dealer's pinned public keys (the private key is the game process's own, never the database's)
  game.dealer_public_keys()
  to poker_game;
-- pinning and retiring a dealer key: an operator act (the admin role's POST /api/dealer-keys, under the
-- operator's live session); never the game login's
grant execute on function game.dealer_public_keys(), game.pin_dealer_key(uuid, text), game.retire_dealer_key(uuid, text) to poker_admin;

grant execute on function game.create_table(text, text, jsonb, text, uuid, integer, integer, text, text) to poker_cage;
-- Operator acts behind the cage's operator routes (a live admin session each): freezing a table and
-- the list of game process URLs. begin_hand and finish_hand, which only the test harness calls, are
-- granted to no service login (the harness route calls them as the owner).
grant execute on function
  game.set_table_status(uuid, text, text),
  game.allow_process_url(uuid, text),
  game.forbid_process_url(uuid, text),
  game.process_url_list(uuid)
  to poker_cage;

-- The read views (db/functions/game/60_read_views.sql): the game role reads all of them (its routes,
-- the room), executing the rules functions game.tournaments shows and the refs game.seats reads;
-- the cage reads of a table only what its routes answer with (its kind of play, money kind, status
-- and rake), nothing of tournaments or seats. The chain bank's columns are granted in 67_bank.sql.
grant select on game.table_records, game.tournaments, game.seats to poker_game;
grant execute on function
  game_private.sng_clock_factor(jsonb),
  game_private.sng_level_ms(jsonb),
  game_private.sng_action_ms(jsonb),
  game_private.sng_place_amount_list(jsonb),
  game_private.registered_count(text),
  cage.tournament_ref(text),
  cage.is_tournament_refund_ref(text)
  to poker_game;
-- what an escape tells the players it unseated: their custody entries (db/functions/game/90_escape_notices.sql; reads)
grant execute on function game.escape_notices(text, uuid[]) to poker_game;
grant select (table_id, bank, mode, money_kind, status, unreconciled_rake, reconciled_rake) on game.table_records to poker_cage;

grant select on game.tables, game.table_players, game.position_links, game.seat_credits, game.hand_histories, game.rake_rows to poker_admin, poker_anonymous;
-- who runs which table: the game processes and their leases, read by operators
grant select on game.table_leases, game.process_urls, game.table_status_acts to poker_admin, poker_anonymous;
grant select (id, lock_key, url, started_at, backend_pid) on game.game_processes to poker_admin, poker_anonymous;

drop policy if exists tables_read on game.tables;
create policy tables_read on game.tables for select to poker_game, poker_admin using (true);
drop policy if exists table_players_read on game.table_players;
create policy table_players_read on game.table_players for select to poker_game, poker_admin using (true);
drop policy if exists position_links_read on game.position_links;
create policy position_links_read on game.position_links for select to poker_game, poker_admin using (true);
drop policy if exists seat_credits_read on game.seat_credits;
create policy seat_credits_read on game.seat_credits for select to poker_game, poker_admin using (true);
drop policy if exists hand_histories_read on game.hand_histories;
create policy hand_histories_read on game.hand_histories for select to poker_game, poker_admin using (true);
drop policy if exists rake_rows_read on game.rake_rows;
create policy rake_rows_read on game.rake_rows for select to poker_game, poker_admin using (true);
drop policy if exists game_processes_read on game.game_processes;
create policy game_processes_read on game.game_processes for select to poker_admin using (true);
drop policy if exists table_leases_read on game.table_leases;
create policy table_leases_read on game.table_leases for select to poker_admin using (true);
drop policy if exists process_urls_read on game.process_urls;
create policy process_urls_read on game.process_urls for select to poker_admin using (true);
drop policy if exists table_status_acts_read on game.table_status_acts;
create policy table_status_acts_read on game.table_status_acts for select to poker_admin using (true);
