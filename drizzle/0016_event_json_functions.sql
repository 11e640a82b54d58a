-- Event payloads are built in SQL, in the statement that changes the state, with the same field
-- names and formats as the API (timestamps ISO 8601 UTC with milliseconds).
CREATE OR REPLACE FUNCTION waygate_ts(t timestamptz) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_message_json(m messages) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', m.id, 'direction', m.direction, 'deviceId', m.device_id, 'jobId', m.job_id,
    'to', CASE WHEN m.direction = 'out' THEN m.peer END, 'from', CASE WHEN m.direction = 'in' THEN m.peer END,
    'type', m.type, 'content', m.content, 'mediaUrl', m.media_url, 'status', m.status, 'attempts', m.attempts,
    'error', CASE WHEN m.error_code IS NULL THEN NULL ELSE jsonb_build_object('code', m.error_code, 'message', COALESCE(m.error_message, '')) END,
    'scheduledAt', waygate_ts(m.scheduled_at), 'createdAt', waygate_ts(m.created_at), 'queuedAt', waygate_ts(m.queued_at),
    'sentAt', waygate_ts(m.sent_at), 'deliveredAt', waygate_ts(m.delivered_at), 'readAt', waygate_ts(m.read_at),
    'failedAt', waygate_ts(m.failed_at), 'cancelledAt', waygate_ts(m.cancelled_at), 'receivedAt', waygate_ts(m.received_at))
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_device_json(d devices) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', d.id, 'name', d.name, 'status', d.status, 'phoneNumber', d.phone_number, 'lastError', d.last_error,
    'createdAt', waygate_ts(d.created_at), 'updatedAt', waygate_ts(d.updated_at), 'connectedAt', waygate_ts(d.connected_at),
    'disconnectedAt', waygate_ts(d.disconnected_at), 'loggedOutAt', waygate_ts(d.logged_out_at), 'removedAt', waygate_ts(d.removed_at))
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION waygate_job_json(j bulk_jobs) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', j.id, 'status', j.status, 'deviceId', j.device_id, 'type', j.type, 'totalContacts', j.total_contacts,
    'sentCount', j.sent_count, 'failedCount', j.failed_count, 'deliveredCount', j.delivered_count, 'readCount', j.read_count,
    'cancelledCount', j.cancelled_count, 'scheduledAt', waygate_ts(j.scheduled_at), 'createdAt', waygate_ts(j.created_at),
    'completedAt', waygate_ts(j.completed_at), 'cancelledAt', waygate_ts(j.cancelled_at))
$$;
