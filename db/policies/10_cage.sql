-- The cage: only the cage role may post, and only through the functions. Tables are never written
-- directly by any service role; the admin reads through row-level security; nobody else sees a row.
revoke all on schema cage, cage_private from public;
revoke all on all tables in schema cage, cage_private from public;
revoke all on all functions in schema cage, cage_private from public;
revoke all on all tables in schema cage, cage_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
revoke all on all functions in schema cage, cage_private from poker_cage, poker_auth, poker_game, poker_worker, poker_admin, poker_anonymous;
alter default privileges in schema cage, cage_private revoke execute on functions from public;

grant usage on schema cage to poker_cage, poker_worker, poker_admin, poker_anonymous;

-- cage service: reads its books, writes only through the API functions
grant select on cage.cage_accounts, cage.cage_entries, cage.cage_ledger, cage.table_books, cage.receipts, cage.account_balances
  to poker_cage;
grant execute on function
  cage.ensure_account(text, uuid, text, text),
  cage.post_movement(text, text, text, bigint[], bigint[], jsonb),
  cage.post_movements(jsonb),
  cage.audit(),
  cage.rebuild_projection(),
  cage.record_table_books(text, text, bigint, bigint, text),
  cage.store_receipt(text, uuid, text, text, bytea, bytea, bytea),
  cage.receipt_private_key(bytea)
  to poker_cage;

-- worker: runs the periodic audit (read-only)
grant execute on function cage.audit() to poker_worker;

-- admin GraphQL: reads the books under RLS. The anonymous role is granted the same SELECT so that
-- row-level security, not a missing grant, is what shows it nothing.
grant select on cage.cage_accounts, cage.cage_entries, cage.cage_ledger, cage.table_books, cage.receipts, cage.account_balances
  to poker_admin, poker_anonymous;
grant execute on function cage.audit() to poker_admin;

drop policy if exists cage_accounts_read on cage.cage_accounts;
create policy cage_accounts_read on cage.cage_accounts for select to poker_cage, poker_admin using (true);
drop policy if exists cage_entries_read on cage.cage_entries;
create policy cage_entries_read on cage.cage_entries for select to poker_cage, poker_admin using (true);
drop policy if exists cage_ledger_read on cage.cage_ledger;
create policy cage_ledger_read on cage.cage_ledger for select to poker_cage, poker_admin using (true);
drop policy if exists table_books_read on cage.table_books;
create policy table_books_read on cage.table_books for select to poker_cage, poker_admin using (true);
drop policy if exists receipts_read on cage.receipts;
create policy receipts_read on cage.receipts for select to poker_cage, poker_admin using (true);
