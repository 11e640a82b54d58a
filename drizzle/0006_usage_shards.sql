ALTER TABLE "usage_periods" ADD COLUMN "shard" smallint DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "usage_periods" DROP CONSTRAINT "usage_periods_account_id_period_start_pk";--> statement-breakpoint
ALTER TABLE "usage_periods" ADD CONSTRAINT "usage_periods_account_id_period_start_shard_pk" PRIMARY KEY("account_id","period_start","shard");
