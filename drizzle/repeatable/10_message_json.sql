-- A message as the API shows it (MessageSchema in src/messaging/message-record.ts, mapped by
-- toMessage in src/messaging/message-model.ts), for the payloads of message.status,
-- message.received, message.edited and message.deleted. test/record-contract.test.ts keeps it equal to toMessage.
--
-- waygate_message_json must have no sub-SELECT of its own, so PostgreSQL inlines it into the
-- statement that calls it (outcomes and receipts build it once per message) instead of running
-- each call through the SQL-function executor; the poll's votes, which need one, are
-- waygate_poll_json's, called only for a poll.

-- A poll's part of a message: its options, whether several may be chosen, and each option's votes.
CREATE OR REPLACE FUNCTION waygate_poll_json(p jsonb) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'options', p->'options', 'multiple', p->'multiple',
    'votes', COALESCE((SELECT jsonb_agg(jsonb_build_object('option', o.option,
                                  'count', (SELECT count(*) FROM jsonb_each(p->'voters') AS v WHERE v.value ? o.option)) ORDER BY o.n)
                         FROM jsonb_array_elements_text(p->'options') WITH ORDINALITY AS o(option, n)), '[]'::jsonb))
$$;

-- The record's fields as a row type, for waygate_message_json's to_jsonb(ROW(...)): the keys come
-- from the type, and a NULL field is written without a look-up (jsonb_build_object looks up the
-- type of each of its 64 arguments on every call). Its attributes are in the order of that ROW,
-- which is jsonb's order of keys (shorter first, then bytewise): to_jsonb sorts an object's keys,
-- and its sort finds keys already in order in one pass (a quarter of the payload's cost).
-- A type cannot be replaced, and a running statement may be using it: it is dropped and created
-- again only when `wanted` differs from what the database has (written as quote_ident and
-- format_type write it, else it would be re-created on every start; the record-contract test
-- checks it is not). It replaced waygate_message_record (the same fields in the API's order): a
-- new name, so that re-creating it never drops a type that a running statement of an earlier
-- build uses; a database upgraded from such a build keeps that type for it.
DO $$
DECLARE
  wanted CONSTANT text := 'id text, "to" text, "from" text, poll jsonb, type text, error jsonb, "jobId" text, media jsonb, '
    '"chatId" text, "readAt" text, "sentAt" text, status text, content text, "fromLid" text, "replyTo" text, '
    'attempts integer, contacts jsonb, "deviceId" text, "editedAt" text, "failedAt" text, location jsonb, '
    '"mediaUrl" text, mentions jsonb, "queuedAt" text, reaction jsonb, "createdAt" text, "deletedAt" text, '
    'direction text, "receivedAt" text, "cancelledAt" text, "deliveredAt" text, "scheduledAt" text';
  current text;
BEGIN
  SELECT string_agg(quote_ident(a.attname) || ' ' || format_type(a.atttypid, a.atttypmod), ', ' ORDER BY a.attnum) INTO current
    FROM pg_type t JOIN pg_attribute a ON a.attrelid = t.typrelid AND a.attnum > 0 AND NOT a.attisdropped
   WHERE t.typname = 'waygate_message_fields' AND t.typnamespace = current_schema()::regnamespace;
  IF current IS DISTINCT FROM wanted THEN
    DROP TYPE IF EXISTS waygate_message_fields;
    EXECUTE 'CREATE TYPE waygate_message_fields AS (' || wanted || ')';
  END IF;
END $$;

CREATE OR REPLACE FUNCTION waygate_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT to_jsonb(ROW(
    m.id, CASE WHEN m.direction = 'out' THEN m.peer END, CASE WHEN m.direction = 'in' THEN m.peer END,
    CASE WHEN m.payload ? 'poll' THEN waygate_poll_json(m.payload->'poll') END, m.type,
    CASE WHEN m.error_code IS NULL THEN NULL ELSE jsonb_build_object('code', m.error_code, 'message', COALESCE(m.error_message, '')) END,
    m.job_id, m.media, COALESCE(m.chat_id, m.peer), waygate_ts(m.read_at), waygate_ts(m.sent_at), m.status, m.content,
    m.peer_lid, m.reply_to, m.attempts, m.payload->'contacts', m.device_id, waygate_ts(m.edited_at), waygate_ts(m.failed_at),
    m.payload->'location', m.media_url, to_jsonb(m.mentions), waygate_ts(m.queued_at), m.payload->'reaction',
    waygate_ts(m.created_at), waygate_ts(m.deleted_at), m.direction, waygate_ts(m.received_at), waygate_ts(m.cancelled_at),
    waygate_ts(m.delivered_at), waygate_ts(m.scheduled_at))::waygate_message_fields)
$$;
