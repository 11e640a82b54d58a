-- A delivery row is claimed (claimed_by, claimed_until: no index holds them) and then written with
-- its outcome (status, which the partial indexes name: never a HOT update). The claim stays on the
-- row's page (HOT, no entry in the table's six indexes) only if the page has room for the new
-- version; rows are inserted packed, so with the default fillfactor nine claims in ten wrote an
-- entry into every index (13,183 HOT updates of 120,764 in bench/webhooks).
ALTER TABLE "webhook_deliveries" SET (fillfactor = 70);
