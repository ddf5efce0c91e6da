-- Issue 33: a hand's position links are carried by the hand's own row.
--
-- Every stack a hand end changed was one row of game.position_links (about 5.2 a hand): a heap
-- tuple of about 250 bytes, its primary key entry, its entry in position_links_ref_idx and the
-- foreign key's lock of the position. Measured on the statement that writes them (the hand end's
-- links and stacks, 5 positions): 3.1 KB of WAL, of which the links were 2.3 KB, and about 100 of
-- its 250 microseconds. The hand's row is written anyway: the links now go into it as five
-- parallel arrays (position, seq, delta, stack, hash: about 0.4 KB), and game.position_links keeps
-- every other link (a buy-in, a top-up, a settlement, a bust, and the hands ended before this
-- migration or by game.finish_hand, which stores no hand row). The chain is the same chain: each
-- link is hashed as before (game_private.link_hash over its predecessor's hash, its seq, 'hand',
-- its delta, its stack and the hand id), the position's head still moves with it, and a link's
-- predecessor is the one before it in seq order, whichever of the two places holds it.
--
-- A position's hand links are in hands of its table between the first and the last hand that
-- moved its stack (first_hand, last_hand: written with the stack, in the same update), so reading
-- them is a range of the table's hand order (hand_histories_table_idx), never a scan of every hand:
-- game_private.position_chain (db/functions/game/06_position_chain.sql) gives a position's links
-- from both places, in seq order. The audit's position marks keep the hand number their last hand
-- link was in, where the next run starts reading the table's hands.
alter table game.hand_histories
  add column link_players bigint[], add column link_seqs integer[], add column link_deltas bigint[],
  add column link_stacks bigint[], add column link_hashes text[];
alter table game.table_players add column first_hand bigint, add column last_hand bigint;
alter table cage_private.cause_position_marks add column hand_number bigint;

-- the hand row's check: the links' five arrays come together, one entry per link
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
     and (r.status = any (array['finished', 'abandoned']))
     and (case when r.link_players is null then r.link_seqs is null and r.link_deltas is null and r.link_stacks is null and r.link_hashes is null
               else r.status = 'finished' and cardinality(r.link_players) between 1 and 10
                    and cardinality(r.link_seqs) = cardinality(r.link_players) and cardinality(r.link_deltas) = cardinality(r.link_players)
                    and cardinality(r.link_stacks) = cardinality(r.link_players) and cardinality(r.link_hashes) = cardinality(r.link_players)
                    and array_position(r.link_players, null) is null and array_position(r.link_seqs, null) is null
                    and array_position(r.link_deltas, null) is null and array_position(r.link_hashes, null) is null
                    and array_position(r.link_stacks, null) is null and 0 <= all (r.link_stacks) and 2 <= all (r.link_seqs) end);
end;
$$;

-- replaced with new signatures by db/functions (write_cash_end answers the links it wrote; the
-- audit's links name the hand number of each hand link)
drop function if exists game_private.write_cash_end(text, text, jsonb, bigint);
drop function if exists cage.cause_audit_links(boolean, integer);
