-- CreateTable
CREATE TABLE "_svc_agent_credit_usage" (
    "spanSeconds" INTEGER NOT NULL,
    "startMs" BIGINT NOT NULL,
    "source" TEXT NOT NULL,
    "credits" BIGINT NOT NULL DEFAULT 0,
    "calls" INTEGER NOT NULL DEFAULT 0
);

-- CreateIndex
CREATE UNIQUE INDEX "_svc_agent_credit_usage_spanSeconds_startMs_source_key" ON "_svc_agent_credit_usage"("spanSeconds", "startMs", "source");
