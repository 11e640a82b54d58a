-- A device as the API shows it (toDevice in src/devices/device-store.ts; the proxy's password
-- masked as maskProxyUrl in src/devices/device-proxy.ts does), for the payloads
-- of device.status. test/record-contract.test.ts keeps it equal to the API's answer.
CREATE OR REPLACE FUNCTION waygate_device_json(d devices) RETURNS jsonb LANGUAGE sql STABLE PARALLEL SAFE AS $$
  SELECT jsonb_build_object(
    'id', d.id, 'name', d.name, 'status', d.status, 'phoneNumber', d.phone_number, 'lastError', d.last_error,
    'proxyUrl', regexp_replace(d.proxy_url, '^([a-z0-9+.-]+://[^:/@]*):[^@/]*@', '\1:***@', 'i'),
    'createdAt', waygate_ts(d.created_at), 'updatedAt', waygate_ts(d.updated_at), 'connectedAt', waygate_ts(d.connected_at),
    'disconnectedAt', waygate_ts(d.disconnected_at), 'loggedOutAt', waygate_ts(d.logged_out_at), 'removedAt', waygate_ts(d.removed_at))
$$;
