-- One hand end (issue 22): the room writes a hand's stacks, its rake and its history in one
-- transaction (game.end_hand), and the positions that hand left with no chips are kept with its
-- history, so a retried end whose first answer was lost reads back exactly what was committed.
alter table game.hand_histories add column busted bigint[];
comment on column game.hand_histories.busted is
  'The positions this hand left with no chips (game.end_hand): the answer a retried end reads back. Null for a hand recorded otherwise (abandoned, or game.record_hand).';
