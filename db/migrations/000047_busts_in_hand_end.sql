-- Issue 32: a bust settles in the hand's end. game.end_hand closes each position its cash hand left
-- with no chips in its own transaction (game_private.close_busts: on a cage table the cage's
-- explicit-zero bust settlement, db/functions/cage/62_busts.sql; on a chain-bank table the chain
-- bank's, db/functions/bank/25_busts.sql); there is no /internal/bust round trip on either bank. A
-- cage bust's receipt is signed afterwards by the cage process (the job cage_sign_bust_receipts),
-- which finds the busts still unsigned through this index.
create index withdraw_intents_busts_idx on cage.withdraw_intents (created_at, player_id) where settlement = 'bust';

comment on table cage.withdraw_intents is 'Stand-ups, forced withdrawals and busts on the cage. Written by cage.settle_position (a stand-up''s settlement), cage_private.close_bust (a bust, in its hand''s end) and cage.mark_withdrawal_settled.';
comment on table bank.withdraw_intents is 'Chain-bank stand-ups, forced withdrawals and busts. Written by bank.open_withdrawal / advance / mark_settled, and bank_private.close_bust (a bust, in its hand''s end).';
