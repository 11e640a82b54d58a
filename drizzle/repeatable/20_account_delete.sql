-- Removing an account removes its events, messages (and their queue rows), their daily counts and its chats: the foreign
-- keys that did it were dropped from the hot inserts (migrations 0019, 0021 and 0049); the trigger
-- accounts_delete_events (created in 0019) calls this on the rare account delete.
CREATE OR REPLACE FUNCTION waygate_delete_account_events() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events WHERE account_id = OLD.id;
  DELETE FROM message_queue q USING messages m WHERE m.id = q.id AND m.account_id = OLD.id;
  DELETE FROM messages WHERE account_id = OLD.id;
  DELETE FROM message_days WHERE account_id = OLD.id;
  DELETE FROM message_day_failures WHERE account_id = OLD.id;
  DELETE FROM chats WHERE account_id = OLD.id;
  RETURN OLD;
END
$$;
