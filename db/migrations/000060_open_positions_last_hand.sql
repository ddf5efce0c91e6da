-- Issue 33 (sixth part): a position's last_hand is set when it closes (game_private.close_position,
-- or the hand end that busts it), no longer at every hand that moves its stack: the row's update at
-- a hand end is logged from its first changed column to its last, and last_hand is the row's last
-- (about 90 bytes of WAL a moved position, 0.5 KB a hand). An open position's links may be in any
-- hand of its table from its first_hand on (game_private.position_chain reads up to last_hand, or
-- to the table's latest hand while it is null). A position left open by an earlier release keeps a
-- last_hand that its next hands would not move: cleared here, so its range reaches them.
update game.table_players set last_hand = null where status <> 'closed' and last_hand is not null;

comment on column game.table_players.last_hand is
  'The last hand of the table that can carry a link of this position: set when it closes (the hand that busted it, or the table''s latest hand at its settlement); null while it is open (its hand links may be in any hand of the table from first_hand on). Read by game_private.position_chain.';
