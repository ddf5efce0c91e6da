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
