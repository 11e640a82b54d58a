-- A bulk job as the API shows it (BulkJobSchema in src/messaging/message-record.ts, mapped by
-- toBulkJob in src/messaging/message-model.ts), for the payloads of bulk_job.completed and
-- bulk_job.cancelled. test/record-contract.test.ts keeps it equal to toBulkJob.
CREATE OR REPLACE FUNCTION waygate_job_json(j bulk_jobs) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', j.id, 'status', j.status, 'deviceId', j.device_id, 'type', j.type, 'totalContacts', j.total_contacts,
    'sentCount', j.sent_count, 'failedCount', j.failed_count, 'deliveredCount', j.delivered_count, 'readCount', j.read_count,
    'cancelledCount', j.cancelled_count, 'scheduledAt', waygate_ts(j.scheduled_at), 'createdAt', waygate_ts(j.created_at),
    'completedAt', waygate_ts(j.completed_at), 'cancelledAt', waygate_ts(j.cancelled_at))
$$;
