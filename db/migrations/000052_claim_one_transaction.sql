-- A claim is one transaction (issue 33): claims.credit_claim judges the claim, posts the cage's
-- grant movement, writes the ledger row and closes the claim intent together, so no claim is ever
-- left half-done between the game and the cage. What only mended that hop goes: the three-step
-- functions (claims.open_claim, claims.finish_claim) and the lost-claim reconciler
-- (claims.complete_lost_claims, the worker's claims_complete_lost job). The cage's grant
-- (POST /api/grant, cage.grant_play_chips) stays: it mints only for an open claim intent, and none
-- is opened any more, so it answers a replay of a grant already made and refuses the rest.
--
-- What an earlier version may have left open is finished here, once, the way the reconciler would
-- have: an open intent whose grant minted is completed from it when the claim is still due (the
-- ledger row, the section claimed); one with no grant is abandoned (nothing was minted; the user
-- may claim again). An intent whose grant minted but whose claim is no longer due stays open for an
-- operator (the audit names its grant); a later claim of that section and period takes it up
-- (claims_private.take_claim_intent) and pays what its grant minted. A fresh database has none.
do $$
declare
  r record;
  v_due boolean;
begin
  for r in select i.*, e.id as grant_entry from claims.claim_intents i
             left join cage.cage_entries e on e.ref_id = i.claim_id and e.kind = 'grant'
                  and e.memo ->> 'user_id' = i.user_id::text and e.amounts[2] = i.amount
            where i.status = 'open'
            order by i.opened_at
  loop
    if r.grant_entry is null then
      update claims.claim_intents set status = 'abandoned', closed_at = now() where claim_id = r.claim_id;
      continue;
    end if;
    v_due := not exists (select from claims.claim_ledger l
                          where l.user_id = r.user_id and l.section_key = r.section_key
                            and (r.kind = 'unlock' or l.period = r.period))
      and case r.kind
            when 'unlock' then exists (select from claims.user_claim_sections u
                                        where u.user_id = r.user_id and u.section_key = r.section_key and u.state = 'lit')
            else not exists (select from claims.user_claim_sections u
                              where u.user_id = r.user_id and u.section_key = r.section_key and u.period = r.period)
          end;
    if v_due then
      insert into claims.claim_ledger (user_id, section_key, period, amount, claim_id, grant_tx)
      values (r.user_id, r.section_key, r.period, r.amount, r.claim_id, r.claim_id);
      insert into claims.user_claim_sections as u (user_id, section_key, state, claimed_at, period, claim_id)
      values (r.user_id, r.section_key, 'claimed', now(), r.period, r.claim_id)
      on conflict (user_id, section_key) do update set state = 'claimed', claimed_at = now(), period = excluded.period, claim_id = excluded.claim_id;
      update claims.claim_intents set status = 'claimed', closed_at = now() where claim_id = r.claim_id;
    end if;
  end loop;
end;
$$;

drop function if exists claims.open_claim(text, uuid, text, timestamptz, jsonb);
drop function if exists claims.finish_claim(uuid, text, text, bigint, text, text);
drop function if exists claims.complete_lost_claims(integer);

comment on table claims.claim_intents is
  'One per claim (user, section, period): written and closed in the claim''s one transaction (claims.credit_claim); read by the cage''s grant and the audit.';
