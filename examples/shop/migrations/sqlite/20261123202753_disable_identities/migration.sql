-- AlterTable
ALTER TABLE "_svc_users" ADD COLUMN "disabledAt" DATETIME;

-- AlterTable
ALTER TABLE "_svc_service_accounts" ADD COLUMN "disabledAt" DATETIME;
