-- The cash loop on the cage, step by step, as the roles run it (each step as the database role of
-- the service that takes it). Run by `npm run examples` (scripts/sql-examples.ts), which prints each
-- statement and its result; db/examples/cash-loop.out is the expected output, checked in CI.

-- An operator (made by `npm run admin:create`) and a player (made by the identity bridge), as the
-- owner; their ids are kept in a session table the service roles may read (they cannot read auth).
create temp table ids (operator uuid, player uuid, position bigint, head text, player_sid uuid);
-- (operator: the handle of the operator's live admin session, the sid their access JWT carries; the
-- operator functions derive the operator from it. The admin sign-in opens it with proof of the
-- password (auth.create_session); the owner writes the session row here.)
insert into ids default values;
with s as (insert into auth_private.sessions (user_id, token_hash, expires_at)
           select auth.create_admin('ops@example.com', 'example-password-hash'), sha256('example-session'), now() + interval '1 hour'
           returning sid)
update ids set operator = (select sid from s);
select count(*) as invites from (select auth.mint_invite('inv_example')) m;
update ids set player = (select user_id from auth.bridge_sign_in('oidc', 'player-1', 'player@example.com', 'inv_example'));
-- (player_sid: the grant of the player's access JWT, as minting it writes: the cage acts for the
-- player only through their token's handle)
update ids set player_sid = auth.grant_access(player, 3600);
grant select on ids to poker_cage, poker_game;

-- The operator's purchase brings 1000 play chips in from outside, recorded with the operator.
set role poker_cage;
select ref_id, status, balance
  from cage.exchange_chips('purchase', (select player from ids), 1000, 'pay-1', 'play',
                           (select operator from ids));
reset role;

-- A table (the bank's POST /api/tables).
set role poker_cage;
select table_id, money_kind, status from game.create_table('example-table', 'poker',
  '{"smallBlind":1,"bigBlind":2,"minBuyIn":40,"maxBuyIn":200,"maxPlayers":6}', 'play', null);

-- The deposit: the cage posts the buy-in (user -> table escrow) and opens the intent ...
select ref_id, status, amount, replayed
  from cage.open_deposit((select player_sid from ids), 'sit-1', 'example-table', 0, 150);
reset role;

-- ... and the game funds the seat, only for that live deposit (a made-up key is refused); the
-- same transaction confirms the deposit.
set role poker_game;
select seat_index, chip_balance, status
  from game.credit_seat('deposit:' || (select player from ids) || ':sit-1',
                        'example-table', (select player from ids), 0, 150);
select * from game.credit_seat('made-up-key', 'example-table', (select player from ids), 1, 150);
reset role;

set role poker_cage;
select status from cage.deposit_intents where ref_id = 'deposit:' || (select player from ids) || ':sit-1';
select a.account_type, a.balance from cage.cage_accounts a where a.account_type in ('user', 'table_escrow') order by a.account_type;
reset role;

-- The stand-up: the game freezes the position (stack and chain head) ...
set role poker_game;
select seat_index, chip_balance from game.stand_up('example-table', (select player_sid from ids));
reset role;
-- (its answer carries the position and its chain head to the cage, over HTTP)
update ids set (position, head) = (select id, history_hash from game.table_players where table_id = 'example-table');

-- The cage signs receipts with a key only its process holds; the database keeps the public half,
-- pinned by the owner or an operator (README, "Keys"). Here the owner pins the example's key.
select purpose, retired_at from cage_private.pin_key(null, 'receipt', decode(repeat('11', 32), 'hex'));

-- ... the cage writes the terminal row (escrow -> user), which closes the seat, and in the same
-- transaction its receipt: signed over a payload naming the ledger entry and its own user.
begin;
set local role poker_cage;
select amount, settlement, replayed
  from cage.settle_position((select player from ids), 'example-table',
                            (select position from ids), 150, (select head from ids),
                            '0x' || repeat('e', 64), 'cash_out', false);
select (r.receipt).ledger_ref_id, r.replayed
  from cage.store_receipt('withdraw:0x' || repeat('e', 64), 'example-table', null,
                          convert_to(json_build_object('ledgerRefId', 'withdraw:0x' || repeat('e', 64),
                                                       'userId', (select player from ids))::text, 'UTF8'),
                          decode(repeat('00', 64), 'hex'), decode(repeat('11', 32), 'hex')) r;
commit;

select status, chip_balance from game.table_players where id = (select position from ids);

-- The books: the chips are back on the user's balance, the escrow is empty, and the audit is clean.
set role poker_cage;
select a.account_type, a.balance from cage.cage_accounts a where a.account_type in ('user', 'table_escrow') order by a.account_type;
select kind, amounts from cage.cage_entries order by id;
select count(*) as violations from cage.audit();
reset role;
