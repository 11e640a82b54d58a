/**
 * Plans are rows (seeded: free, pro, yearly, unlimited). Quota periods are computed by the SQL
 * function waygate_period(anchor, period, at) (migration 0005), the one definition used both when
 * a send reserves quota and when GET /account shows the period.
 */
export type PlanPeriod = 'month' | 'year';

export interface Plan {
  id: string;
  name: string;
  messageQuota: number | null;
  period: PlanPeriod;
  maxDevices: number | null;
  maxWebhooks: number | null;
  /** Bytes the account's uploads may hold at once. */
  maxUploadBytes: number | null;
}
