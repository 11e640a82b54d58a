-- waygate_due_messages returns at most p_limit ids, but a set-returning function is estimated at
-- 1,000 rows, so the claim statement joined its result to messages (twice: the rows it updates
-- and the message each one quotes) by hashing a sequential scan of the whole table. Each claim
-- cost grew with the table: with 1,000 paced devices claiming one message each, PostgreSQL spent
-- its CPU hashing messages and the paced sends fell minutes behind. Estimated at 10 rows, the
-- joins are primary-key lookups whatever the size of the table or of the claim.
ALTER FUNCTION waygate_due_messages(text, int, int) ROWS 10;
