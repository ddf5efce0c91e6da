-- Issue 33: the rows every hand writes are checked by one function each, not a dozen constraints.
--
-- Postgres prepares every CHECK constraint of a table again at each statement that writes it: it
-- parses the stored expression (its node text, about 0.4-2 KB each), plans it and compiles it,
-- whether or not the statement touched its columns. Measured on a copy of game.tables (its 13
-- checks, 10.9 KB of node text), an UPDATE of one timestamp and its commit took 58 microseconds with
-- them and 9 without; the same conditions in one plpgsql function taking the row took 19. A
-- table's row is written twice a hand (its deal and its end), a hand's row once, each seated
-- position's once, and its chain's links once: with the sits, about 18% of Postgres's CPU during
-- play was spent preparing these checks (perf: ExecConstraints, stringToNode).
--
-- Each table's checks are now the AND of the same conditions, word for word, in a function of the
-- row (game_private.<table>_row_valid), checked as one constraint (<table>_row_valid). A NULL
-- condition passes as it did alone (AND of true and NULL is NULL, and a CHECK passes on NULL); a
-- false one fails the row as it did. The functions are immutable and read nothing but the row (and
-- game_private.lifecycle_states(), immutable); a change to a condition is a new migration that
-- replaces the function and validates the rows again (alter table ... validate constraint after
-- dropping and adding it).

-- game.tables ------------------------------------------------------------------------------------
create or replace function game_private.tables_row_valid(r game.tables) returns boolean
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (r.game_type = any (array['poker', 'arena']))
     and (jsonb_typeof(r.settings) = 'object')
     and (r.status = any (array['active', 'pending', 'frozen']))
     and (r.mode = any (array['cash', 'sng']))
     and (r.kind = any (array['open', 'human_only', 'agent', 'copilot']))
     and (r.unreconciled_rake >= 0)
     and (r.reconciled_rake >= 0)
     and ((r.mode = 'sng') = (r.tournament_state is not null))
     and (r.bank = any (array['cage', 'chain']))
     and (r.tournament_state is null or r.tournament_state = any (game_private.lifecycle_states()))
     and (r.announced_state is null or r.announced_state = any (game_private.lifecycle_states()))
     and (r.abandoned_deals >= 0 and r.unrevealed_deals >= 0)
     and (length(r.table_id) between 1 and 64 and r.table_id ~ '^[A-Za-z0-9]' and r.table_id !~ '[^A-Za-z0-9_.:-]');
end;
$$;
alter table game.tables
  drop constraint tables_game_type, drop constraint tables_settings_object, drop constraint tables_status,
  drop constraint tables_mode, drop constraint tables_kind, drop constraint tables_rake_nonnegative,
  drop constraint tables_reconciled_rake_nonnegative, drop constraint tables_sng_state, drop constraint tables_bank,
  drop constraint tables_tournament_state, drop constraint tables_announced_state,
  drop constraint tables_abandoned_deals_nonnegative, drop constraint tables_table_id_shape,
  add constraint tables_row_valid check (game_private.tables_row_valid(tables.*));

-- game.hand_histories ----------------------------------------------------------------------------
create or replace function game_private.hand_histories_row_valid(r game.hand_histories) returns boolean
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (case when r.compact is null then true
               when octet_length(r.compact) < 6 or octet_length(r.compact) > 65536 then false
               else get_byte(r.compact, 0) = 1 end)
     and (jsonb_typeof(r.history) = 'array')
     and (r.status <> 'finished' or ((r.history is null) <> (r.compact is null)))
     and ((r.record is null) = (r.record_hash is null) and (r.record is null) = (r.record_signature is null)
          and (r.record is null) = (r.dealer_key is null) and (r.record is null) = (r.deal is null))
     and (length(r.record_hash) = 64 and r.record_hash !~ '[^0-9a-f]' and length(r.record_signature) = 128
          and r.record_signature !~ '[^0-9a-f]' and length(r.dealer_key) = 64 and r.dealer_key !~ '[^0-9a-f]')
     and (r.started is null or (jsonb_typeof(r.started) = 'object' and (r.started ->> 'type') = 'hand_started'))
     and (r.status = any (array['finished', 'abandoned']));
end;
$$;
alter table game.hand_histories
  drop constraint hand_histories_compact_shape, drop constraint hand_histories_history, drop constraint hand_histories_one_form,
  drop constraint hand_histories_record_all_or_none, drop constraint hand_histories_record_hex,
  drop constraint hand_histories_started_shape, drop constraint hand_histories_status,
  add constraint hand_histories_row_valid check (game_private.hand_histories_row_valid(hand_histories.*));

-- game.table_players -----------------------------------------------------------------------------
create or replace function game_private.table_players_row_valid(r game.table_players) returns boolean
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return (r.chip_balance >= 0)
     and (r.status <> 'closed' or r.chip_balance = 0)
     and (r.entry_state is null or r.entry_state = any (array['reserved', 'paid']))
     and (r.entry_state is distinct from 'reserved' or r.chip_balance = 0)
     and (r.seat_index >= 0 and r.seat_index <= 9)
     and (r.status = any (array['seated', 'leaving', 'closed']))
     and (r.tournament_stack is null or r.tournament_stack >= 0);
end;
$$;
alter table game.table_players
  drop constraint table_players_chips_nonnegative, drop constraint table_players_closed_zero,
  drop constraint table_players_entry_state, drop constraint table_players_reserve_unpaid,
  drop constraint table_players_seat_index, drop constraint table_players_status, drop constraint table_players_tournament_stack,
  add constraint table_players_row_valid check (game_private.table_players_row_valid(table_players.*));

-- game.position_links: one check, but 2 KB of node text at every statement that writes links
create or replace function game_private.position_links_row_valid(r game.position_links) returns boolean
  language plpgsql immutable parallel safe
  set search_path = pg_catalog, pg_temp
as $$
begin
  return r.event = any (array['buy_in', 'top_up', 'reverted', 'hand', 'cash_out', 'custody', 'bust', 'tournament_result', 'escape']);
end;
$$;
alter table game.position_links
  drop constraint position_links_event,
  add constraint position_links_row_valid check (game_private.position_links_row_valid(position_links.*));
