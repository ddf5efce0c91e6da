-- Issue 33: the rows every hand rewrites keep room on their page for their next version.
--
-- A table's row (about 1.1 KB) is rewritten twice a hand (its deal and its end) and a seated
-- position's once (its stack and chain head). Measured in the live benchmark (20 tables), 40% of the
-- tables' row updates were not HOT: the page held no room for the new version, so each such update
-- also wrote an entry in every index of game.tables and logged the whole row. With half of each page
-- kept free (fillfactor), the new version fits beside the old one, the update is HOT and logs only
-- what changed. New pages follow the setting; existing rows move to such pages as they are updated.
alter table game.tables set (fillfactor = 50);
alter table game.table_players set (fillfactor = 70);

-- The two checks every hand evaluates (a table's row at its deal and its end, a hand's row at its
-- end), written without counted repetitions: Postgres's regex engine took about 6 microseconds for
-- the table id's '{0,63}' and 12 to 23 for each '[0-9a-f]{64}' / '{128}' of the record's hex (6-7%
-- of Postgres's CPU during play, with the deal's own checks). The same strings pass: a length and a
-- negated class say what the counted form said.
alter table game.tables drop constraint tables_table_id_shape;
alter table game.tables add constraint tables_table_id_shape
  check (length(table_id) between 1 and 64 and table_id ~ '^[A-Za-z0-9]' and table_id !~ '[^A-Za-z0-9_.:-]');
alter table game.hand_histories drop constraint hand_histories_record_hex;
alter table game.hand_histories add constraint hand_histories_record_hex
  check (length(record_hash) = 64 and record_hash !~ '[^0-9a-f]'
         and length(record_signature) = 128 and record_signature !~ '[^0-9a-f]'
         and length(dealer_key) = 64 and dealer_key !~ '[^0-9a-f]');
