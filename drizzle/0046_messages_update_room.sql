-- A message row is updated three or four times within seconds of its insert (claimed, sent,
-- delivered, read). Only the claim changes an indexed column (due_at, the queue index); the
-- other updates stay on the row's page (HOT, no index entry) only if the page has room for the
-- new version while the previous ones cannot yet be pruned (a receipt statement's snapshot keeps
-- them): with 30% of each page free half the updates wrote an entry into every index, with 60%
-- free about a third did.
ALTER TABLE "messages" SET (fillfactor = 40);
