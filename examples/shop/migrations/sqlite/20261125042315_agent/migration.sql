-- CreateTable
CREATE TABLE "_svc_app" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_svc_agent_threads" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "identityId" TEXT NOT NULL,
    "preview" TEXT NOT NULL,
    "summary" TEXT,
    "summaryTurns" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "_svc_agent_turns" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "threadId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "userText" TEXT NOT NULL,
    "messages" TEXT NOT NULL,
    "items" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_svc_agent_sessions" (
    "identityId" TEXT NOT NULL PRIMARY KEY,
    "threadId" TEXT,
    "sessionCredits" INTEGER NOT NULL DEFAULT 0,
    "sessionCreditsUsed" INTEGER NOT NULL DEFAULT 0,
    "instanceId" TEXT,
    "leaseUntil" DATETIME,
    "channel" TEXT,
    "options" TEXT,
    "state" TEXT,
    "startedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "_svc_agent_credits" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "consumed" BIGINT NOT NULL DEFAULT 0,
    "added" BIGINT NOT NULL DEFAULT 0,
    "monthKey" TEXT,
    "monthUsed" BIGINT NOT NULL DEFAULT 0,
    "monthlyCap" BIGINT,
    "capSet" BOOLEAN NOT NULL DEFAULT false,
    "paused" BOOLEAN NOT NULL DEFAULT false,
    "updatedAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "_svc_agent_threads_identityId_idx" ON "_svc_agent_threads"("identityId");

-- CreateIndex
CREATE INDEX "_svc_agent_turns_threadId_idx" ON "_svc_agent_turns"("threadId");
