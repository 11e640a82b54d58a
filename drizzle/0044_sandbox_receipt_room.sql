-- A sandbox message row (about 200 bytes) is written three times: accepted, then its delivery
-- and its read receipt flagged as handed over. The flags are unindexed, so those two updates can
-- stay on the row's page (HOT) only if the page has room for two more versions of each row;
-- with 20% free most of them did not, and each such update wrote an entry into all four indexes.
ALTER TABLE "sandbox_messages" SET (fillfactor = 40);
