-- The position chain as it is read (issue 33, migration 000058): a hand's links in its own row,
-- every other link in game.position_links. The game domain's, kept at the top of db/functions
-- because the cage's audit of causes (cage/47_cause_audit.sql) and its custody check
-- (cage/85_custody.sql) read it in SQL bodies, which Postgres checks when they are created: these
-- read only tables, made by the migrations. The links themselves are written by
-- game/06_position_chain.sql, game/20_seats.sql and game/30_hands.sql.

-- A position's chain after its link p_after_seq, in seq order, from both places links are kept
-- (issue 33, migration 000058): the rows of game.position_links (a buy-in, a top-up, a settlement,
-- a bust, and the hand links written before the hand rows carried them or by game.finish_hand)
-- and the links a hand's row carries (link_*). The hand rows read are the table's hands from
-- p_from_hand (null: the position's first_hand, the first hand that moved its stack) to the
-- position's last_hand (set when it closes; while it is open, its links may be in any later hand
-- of the table, issue 33's sixth part), by the table's hand order: a range, never every hand. A
-- hand link's prev_hash is the hash of the link before it when that link is in the answer (its row
-- does not repeat it: link_hash binds it), else null.
create or replace function game_private.position_chain(p_player_id bigint, p_after_seq integer, p_from_hand bigint)
  returns setof game.position_links
  language sql stable
  set search_path = pg_catalog, pg_temp
as $$
  select c.player_id, c.seq, c.event, c.delta, c.stack, c.ref_id,
         coalesce(c.prev_hash, lag(c.hash) over (order by c.seq)), c.hash, c.created_at
    from (select l.player_id, l.seq, l.event, l.delta, l.stack, l.ref_id, l.prev_hash, l.hash, l.created_at
            from game.position_links l
           where l.player_id = p_player_id and l.seq > p_after_seq
          union all
          select u.player_id, u.seq, 'hand', u.delta, u.stack, h.hand_id, null, u.hash, h.ended_at
            from game.table_players p
            join game.hand_histories h on h.table_id = p.table_id
             and h.hand_number between greatest(p.first_hand, p_from_hand) and coalesce(p.last_hand, 9223372036854775807) -- (greatest ignores a null)
           cross join lateral unnest(h.link_players, h.link_seqs, h.link_deltas, h.link_stacks, h.link_hashes) u (player_id, seq, delta, stack, hash)
           where p.id = p_player_id and h.link_players is not null and u.player_id = p_player_id and u.seq > p_after_seq) c
   order by c.seq
$$;

-- The stack a position held before a hand of its table (number p_hand_number, ended at p_ended_at)
-- moved it: the stack of its last link made before that hand ended, in either place
-- (game_private.position_chain), read backwards from the hand (by key, and by the table's hand order
-- down to the position's first hand): null when it has none.
--
-- enable_bitmapscan off: the planner, which cannot see how far back the position's link is, read the
-- whole range by a bitmap and sorted it (32 ms for a position seated 3,500 hands: the soak's
-- Postgres CPU per hand grew threefold in ten minutes); by the index, backwards, it stops at the
-- first (0.2 ms).
create or replace function game_private.stack_before(p_player_id bigint, p_hand_number bigint, p_ended_at timestamptz)
  returns bigint
  language sql stable
  set search_path = pg_catalog, pg_temp
  set enable_bitmapscan = off
as $$
  select s.stack
    from ((select l.seq, l.stack from game.position_links l
            where l.player_id = p_player_id and l.created_at < p_ended_at
            order by l.seq desc limit 1)
          union all
          (select u.seq, u.stack
             -- the table's hands read backwards from this one to the position's first (by the table's
             -- hand order, each row tested whole): the first that carries a link of the position
             from (select h.link_players, h.link_seqs, h.link_stacks
                     from game.hand_histories h
                    where h.table_id = (select p.table_id from game.table_players p where p.id = p_player_id)
                      and h.hand_number between (select p.first_hand from game.table_players p where p.id = p_player_id) and p_hand_number
                      and h.ended_at < p_ended_at and h.link_players @> array[p_player_id]
                    order by h.hand_number desc limit 1) h
            cross join lateral unnest(h.link_players, h.link_seqs, h.link_stacks) u (player_id, seq, stack)
            where u.player_id = p_player_id)) s
   order by s.seq desc limit 1
$$;
