-- One intent model (issue 32, db/functions/cage/96_intents.sql): the operators read every intent
-- through cage.intents (the admin GraphQL's allIntents; the view shows rows only under a live admin
-- session); the reconcilers, the worker's (server/intents/) and the chain bank's (its reconcile
-- route, which the worker's periodic job calls), take their due intents and record each step's
-- outcome. Neither function moves a chip: one reads keys, the other writes what operators read
-- and when an intent is tried again (a back-off of at most 5 minutes).
grant select on cage.intents to poker_admin;
-- the pure functions the view calls (its reader executes them)
grant execute on function cage.intent_statuses(), cage.intent_status(text, text), cage.intent_grace(text), cage.chip_units() to poker_admin;
grant execute on function cage.due_intents(text, integer, integer), cage.record_intent_attempt(text, text, text) to poker_worker, poker_bank;
