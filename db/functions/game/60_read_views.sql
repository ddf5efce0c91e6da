-- The read views of the game's records (issue 22): what the routes, the cage, the chain bank and
-- the live room read of tables, tournaments and seats, instead of reading game.tables and
-- game.table_players. They run with their owner's rights (not security_invoker): a login granted
-- a view, or some of its columns (db/policies/), reads those and nothing else of the tables. No
-- admin role is granted them: the admin reads the tables through its row policies.
-- A view is re-created on every start (create or replace): a column may be added at the end; one
-- renamed, retyped or removed needs a drop in a migration first.

-- Every table's record. `public_settings` is the settings without the deck seed (what any reader
-- may see); `settings` keeps it, for the room that deals from it.
create or replace view game.table_records as
select t.table_id,
       t.game_type,
       t.mode,
       t.kind,
       t.money_kind::text as money_kind,
       t.bank,
       t.status,
       t.settings,
       t.settings - 'deckSeed' as public_settings,
       t.tournament_state,
       t.current_level,
       t.level_started_at,
       t.current_hand_id,
       t.current_hand_id is not null as hand_in_progress,
       t.unreconciled_rake,
       t.reconciled_rake,
       (select count(*)::integer from game.table_players p where p.table_id = t.table_id and p.status <> 'closed') as seated_count,
       t.created_at,
       -- committed deals that ended abandoned, each revealed in a signed record (issue 31)
       t.abandoned_deals
  from game.tables t;

-- Every Sit-and-Go's lifecycle and the values its rules derive from its settings (the clock factor,
-- a level's and a turn's length in ms on the table's clock, the chips of each place, index 1 = 1st:
-- game/07_tournament_rules.sql). The counts: registered = live registrations (reserved or paid, not
-- closed), alive = entrants with chips, played = paid entries not refunded (whatever their rows
-- became after settlement).
create or replace view game.tournaments as
select t.table_id,
       t.kind,
       t.money_kind::text as money_kind,
       t.bank,
       t.status,
       t.settings,
       t.tournament_state,
       t.current_level,
       t.level_started_at,
       t.starts_at,
       t.play_started_at,
       t.ended_at,
       t.closed_at,
       t.created_at,
       t.auto_fold_count,
       t.current_hand_id is not null as hand_in_progress,
       t.announced_state,
       t.announced_level,
       t.announced_payouts,
       t.lifecycle_trace,
       game_private.registered_count(t.table_id) as registered_count,
       (select count(*)::integer from game.table_players p
         where p.table_id = t.table_id and p.entry_state = 'paid' and p.tournament_stack > 0) as alive_count,
       (select count(*)::integer from game.table_players p
         where p.table_id = t.table_id and p.entry_state = 'paid' and not cage.is_tournament_refund_ref(p.closing_ref_id)) as played_count,
       game_private.sng_clock_factor(t.settings) as clock_factor,
       game_private.sng_level_ms(t.settings) as level_ms,
       game_private.sng_action_ms(t.settings) as action_ms,
       game_private.sng_place_amount_list(t.settings) as place_amounts
  from game.tables t
 where t.mode = 'sng';

-- Every position (a sitting at a cash table, a registration at a Sit-and-Go) with what its refs
-- mean. `stack` is the chips a hand deals with: the tournament stack of a registration (0 before
-- play), the seat's chips at a cash table. `registration` is what became of a registration:
-- reserved or paid while it stands; refunded, released (by its owner) or expired once closed;
-- played after the tournament (null at a cash table). `in_final_standings`: closed by settlement
-- (the tournament's standings list it).
create or replace view game.seats as
select p.id as player_id,
       p.table_id,
       p.user_id,
       p.agent_id,
       p.seat_index,
       p.status,
       p.chip_balance,
       p.tournament_stack,
       case when p.entry_state is not null then coalesce(p.tournament_stack, 0) else p.chip_balance end as stack,
       p.sat_out_at is not null as sat_out,
       p.entry_state,
       p.entry_ref_id,
       p.reserved_until,
       p.closed_at,
       p.elimination_order,
       p.tie_place,
       coalesce(p.closing_ref_id = cage.tournament_ref(p.table_id), false) as in_final_standings,
       cage.is_tournament_refund_ref(p.closing_ref_id) as refunded,
       case when p.entry_state is null then null
            when p.status <> 'closed' then p.entry_state
            when cage.is_tournament_refund_ref(p.closing_ref_id) then 'refunded'
            when p.entry_state = 'reserved' and p.reserved_until <= p.closed_at then 'expired'
            when p.entry_state = 'reserved' then 'released'
            else 'played' end as registration
  from game.table_players p;

-- The seats a room deals to, as they stand: the seated positions in seat order with the chips a hand
-- deals with (a cash stack, or a registrant's tournament chips) and whether the dealer sat them out.
-- The room reads them when it loads, when a seat route changed them, and at every deal (game.deal_hand).
create or replace function game.seats_of(p_table_id text)
  returns table (id text, user_id uuid, agent_id uuid, seat_index integer, chip_balance text, status text, sat_out boolean)
  language sql stable security definer
  set search_path = pg_catalog, pg_temp
as $$
  select s.player_id::text, s.user_id, s.agent_id, s.seat_index, s.stack::text, s.status, s.sat_out
    from game.seats s
    join game.tables t on t.table_id = s.table_id
   where s.table_id = p_table_id and s.status = 'seated' and (t.mode <> 'sng' or s.entry_state is not null)
   order by s.seat_index
$$;
