-- One claim statement serves several devices: it calls waygate_due_messages once per device
-- (LATERAL over the devices asked). At 10 rows a call the planner saw 100 claimed rows and
-- started their jobs by scanning the whole bulk_jobs primary key instead of looking each job up.
-- A paced device claims one message a turn; at 1 row a call every join stays a key lookup.
ALTER FUNCTION waygate_due_messages(text, int, int) ROWS 1;
