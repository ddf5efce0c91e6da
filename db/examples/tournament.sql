-- A two-seat Sit-and-Go on the cage, step by step, as the roles run it (each step as the database
-- role of the service that takes it; the worker's steps are the jobs' calls). Run by
-- `npm run examples`; db/examples/tournament.out is the expected output, checked in CI.

-- An operator and two players, as the owner; their ids are kept in a session table the service
-- roles may read.
create temp table ids (operator uuid, a uuid, b uuid, pos_a bigint, pos_b bigint, process uuid, epoch bigint, a_sid uuid, b_sid uuid);
-- (operator: the handle of the operator's live admin session, the sid their access JWT carries; the
-- operator functions derive the operator from it. The admin sign-in opens it with proof of the
-- password (auth.create_session); the owner writes the session row here.)
insert into ids default values;
with s as (insert into auth_private.sessions (user_id, token_hash, expires_at)
           select auth.create_admin('ops@example.com', 'example-password-hash'), sha256('example-session'), now() + interval '1 hour'
           returning sid)
update ids set operator = (select sid from s);
select count(*) as invites from (select auth.mint_invite('inv_player_a') union all select auth.mint_invite('inv_player_b')) m;
update ids set a = (select user_id from auth.bridge_sign_in('oidc', 'player-a', 'a@example.com', 'inv_player_a')),
               b = (select user_id from auth.bridge_sign_in('oidc', 'player-b', 'b@example.com', 'inv_player_b'));
-- (a_sid, b_sid: the grants of the players' access JWTs, as minting them writes: the cage acts for
-- a player only through their token's handle)
update ids set a_sid = auth.grant_access(a, 3600), b_sid = auth.grant_access(b, 3600);
grant select, update on ids to poker_cage, poker_game, poker_worker;

-- 500 play chips each, bought through the operator.
set role poker_cage;
select status, balance from cage.exchange_chips('purchase', (select a from ids), 500, 'pay-a', 'play', (select operator from ids));
select status, balance from cage.exchange_chips('purchase', (select b from ids), 500, 'pay-b', 'play', (select operator from ids));

-- The table (POST /api/tables stores the settings resolved: the effective level duration, the
-- payout as { position, percent }). Entry 100, of which 10 is the house fee.
select table_id, mode, kind, tournament_state from game.create_table('example-sng', 'poker',
  '{"mode":"sng","kind":"open","seats":2,"entryFee":100,"rakeFee":10,"startingStack":1000,
    "blindStructure":{"startingSmallBlind":10,"increaseFactor":2,"levelDurationSeconds":60,"anteStartLevel":null,"startingAnte":0,"anteIncreaseFactor":1},
    "levelDurationSeconds":60,"prizeStructure":[{"position":1,"percent":100}],"actionTimeoutSeconds":30,
    "lateRegistrationSeconds":0,"rebuyConfig":null}', 'play', null, null, null, 'sng', 'open');
reset role;

-- Player a registers over the websocket: a server-assigned seat held, without money, for 120 s.
set role poker_game;
select registered_count, reserved_until > now() as held from game.tournament_reserve('example-sng', (select a_sid from ids), null, null, 120);
reset role;

-- The bank's deposit pays the fee (amount = entryFee): the tournament_entry debit into the pool.
set role poker_cage;
select * from cage.open_tournament_entry((select a_sid from ids), 'entry-a', 'example-sng', null, 99, 120);
select outcome, tournament_state, registered_count from cage.open_tournament_entry((select a_sid from ids), 'entry-a', 'example-sng', null, 100, 120);
-- b has no reserve: the deposit reserves a seat and pays it; the field is full: starting.
select outcome, tournament_state, registered_count from cage.open_tournament_entry((select b_sid from ids), 'entry-b', 'example-sng', null, 100, 120);
reset role;

-- (the 3 s grace elapses; the worker's tournament_start job runs)
update game.tables set starts_at = now() - interval '1 s' where table_id = 'example-sng';
set role poker_worker;
select tournament_state, current_level from game.tournament_begin_play('example-sng');
reset role;
update ids set pos_a = (select id from game.table_players where table_id = 'example-sng' and user_id = ids.a),
               pos_b = (select id from game.table_players where table_id = 'example-sng' and user_id = ids.b);
select (select chip_balance from game.table_players where id = pos_a) as entry_claim_a,
       (select tournament_stack from game.table_players where id = pos_a) as stack_a from ids;

-- The dealer plays a hand: b is all in and loses. The hand's end writes the tournament stacks
-- (conserved), places the bust, and with one player left ends the tournament.
-- The game process that runs the table registers (its presence is this session's lock) and takes
-- the table's lease (the lease functions act for this connection's process, never an id it names):
-- every hand boundary carries the lease's epoch (none, or another, is refused). The hand itself is
-- played here with the test harness's boundaries, which only the owner executes (a room ends its
-- hands with game.end_hand).
set role poker_game;
update ids set process = (select process_id from game.register_process(null));
update ids set epoch = (select epoch from game.take_lease('example-sng', 60));
reset role;
select (game.begin_hand('example-sng', 'example-hand-1', (select epoch from ids))).current_hand_id as hand;
select elimination_order, tie_place, state
  from game.finish_tournament_hand('example-sng', 'example-hand-1',
         (select jsonb_build_object(pos_a::text, 2000, pos_b::text, 0) from ids), 0, (select epoch from ids));
reset role;

-- Payouts wait until the audit of causes has covered the table's hands (the worker's periodic job
-- moves a table's mark once every hand there verifies: a signed record that replays to its stacks,
-- docs/security.md). The hand above was played with the harness's boundaries, which sign no record,
-- so the owner moves the mark here in the audit's place.
insert into cage_private.cause_table_marks (table_id, hand_number)
select 'example-sng', coalesce(max(h.hand_number), -1) from game.hand_histories h where h.table_id = 'example-sng' and h.status = 'finished'
on conflict (table_id) do update set hand_number = excluded.hand_number;

-- The worker settles it: the payout rows ((100 - 10) x 2 = 180, all to 1st), the entry claims closed.
set role poker_worker;
select tournament_state from cage.settle_tournament('example-sng');
reset role;
set role poker_cage;
select position, amount, confirmed_at is null as unpaid from cage.payout_intents where table_id = 'example-sng';

-- The payoutIntent branch of the withdraw pays the place (another amount is refused); the last
-- payout closes the tournament.
select * from cage.pay_tournament_payout('example-sng', 1, 170);
select ref_id, amount, replayed, tournament_state from cage.pay_tournament_payout('example-sng', 1, 180);
reset role;

-- The books: a has 400 + 180, b 400, the pool keeps the house fee (10 x 2), and the audit is empty.
select (select balance from cage.account_balances where user_id = ids.a) as a,
       (select balance from cage.account_balances where user_id = ids.b) as b,
       (select balance from cage.account_balances where account_type = 'tournament_pool' and scope = 'example-sng') as pool
  from ids;
select count(*) as violations from cage.audit();
