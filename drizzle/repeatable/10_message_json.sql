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

CREATE OR REPLACE FUNCTION waygate_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', m.id, 'direction', m.direction, 'deviceId', m.device_id, 'jobId', m.job_id,
    'to', CASE WHEN m.direction = 'out' THEN m.peer END, 'from', CASE WHEN m.direction = 'in' THEN m.peer END,
    'fromLid', m.peer_lid,
    'type', m.type, 'content', m.content, 'mediaUrl', m.media_url, 'status', m.status, 'attempts', m.attempts,
    'error', CASE WHEN m.error_code IS NULL THEN NULL ELSE jsonb_build_object('code', m.error_code, 'message', COALESCE(m.error_message, '')) END,
    'scheduledAt', waygate_ts(m.scheduled_at), 'createdAt', waygate_ts(m.created_at), 'queuedAt', waygate_ts(m.queued_at),
    'sentAt', waygate_ts(m.sent_at), 'deliveredAt', waygate_ts(m.delivered_at), 'readAt', waygate_ts(m.read_at),
    'failedAt', waygate_ts(m.failed_at), 'cancelledAt', waygate_ts(m.cancelled_at), 'receivedAt', waygate_ts(m.received_at),
    'media', m.media,
    'location', m.payload->'location', 'contacts', m.payload->'contacts',
    'poll', CASE WHEN m.payload ? 'poll' THEN waygate_poll_json(m.payload->'poll') END,
    'reaction', m.payload->'reaction', 'replyTo', m.reply_to, 'mentions', to_jsonb(m.mentions),
    'editedAt', waygate_ts(m.edited_at), 'deletedAt', waygate_ts(m.deleted_at),
    'chatId', COALESCE(m.chat_id, m.peer))
$$;
