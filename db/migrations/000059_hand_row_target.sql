-- Issue 33 (sixth part): a hand's row without the seats of its started event (the signed record
-- holds them, game_private.started_of) is about 0.45 KB shorter, and under the 4096-byte target four
-- six-handed rows in ten no longer had their record compressed (1.6 KB stored plain, about 0.8
-- compressed): the row grew back by most of what it lost.
--
-- Every variable-length column is now `main` and the target 3000 bytes. The toaster works in four
-- rounds while a row is over the target: (1) it compresses `extended` values, (2) it moves
-- `extended` and `external` values out of line, (3) it compresses `main` values, biggest first, and
-- (4) it moves `main` values out of line only when the row would not fit a page (about 8 KB). With
-- every column `main`, rounds 1 and 2 have nothing to do: a row over 3000 bytes has its record
-- compressed first (the biggest value), then whatever else compresses until it is under, and a row
-- still over the target stays whole and inline. Before, `extended` columns and the `external`
-- compact history went out of line (a TOAST chunk and a TOAST index entry) whenever the compressed
-- row was still over the target, which is why the target stayed at 4096 (docs/decisions.md, "Issue
-- 33: the hand's row without repeats").
alter table game.hand_histories
  alter column hand_id set storage main, alter column table_id set storage main, alter column status set storage main,
  alter column history set storage main, alter column result set storage main, alter column agents set storage main,
  alter column players set storage main, alter column busted set storage main, alter column deal set storage main,
  alter column record set storage main, alter column record_hash set storage main, alter column record_signature set storage main,
  alter column dealer_key set storage main, alter column sealed_deal set storage main, alter column compact set storage main,
  alter column started set storage main, alter column link_players set storage main, alter column link_seqs set storage main,
  alter column link_deltas set storage main, alter column link_stacks set storage main, alter column link_hashes set storage main;
alter table game.hand_histories set (toast_tuple_target = 3000);

comment on column game.hand_histories.started is
  'The hand''s hand_started event (button, blinds, ante, their seats), written by the process beside the compact history: what the audit of causes replays with. Since issue 33''s sixth part a hand with a signed record stores it without the seats and the hand id, which the record holds (game_private.started_of reads the whole event). Null for a hand stored before issue 33 (its history holds it).';
