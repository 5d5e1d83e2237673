-- AlterTable
ALTER TABLE "_svc_service_accounts" ADD COLUMN "lastSignInAt" DATETIME;

-- CreateTable
CREATE TABLE "_svc_user_providers" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "userId" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "email" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_svc_logs" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "time" DATETIME NOT NULL,
    "instance" TEXT NOT NULL,
    "kind" TEXT NOT NULL,
    "reqId" TEXT,
    "method" TEXT,
    "path" TEXT,
    "status" INTEGER,
    "durationMs" REAL,
    "identityId" TEXT,
    "identityKind" TEXT,
    "severity" INTEGER,
    "source" TEXT,
    "message" TEXT
);

-- RedefineTables
PRAGMA defer_foreign_keys=ON;
PRAGMA foreign_keys=OFF;
CREATE TABLE "new__svc_users" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "username" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "roles" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "disabledAt" DATETIME,
    "email" TEXT,
    "emailKey" TEXT,
    "emailVerified" BOOLEAN NOT NULL DEFAULT false,
    "admin" BOOLEAN NOT NULL DEFAULT false,
    "lastSignInAt" DATETIME
);
INSERT INTO "new__svc_users" ("createdAt", "disabledAt", "email", "emailKey", "emailVerified", "id", "passwordHash", "roles", "updatedAt", "username") SELECT "createdAt", "disabledAt", "email", "emailKey", "emailVerified", "id", "passwordHash", "roles", "updatedAt", "username" FROM "_svc_users";
DROP TABLE "_svc_users";
ALTER TABLE "new__svc_users" RENAME TO "_svc_users";
CREATE UNIQUE INDEX "_svc_users_username_key" ON "_svc_users"("username");
CREATE UNIQUE INDEX "_svc_users_emailKey_key" ON "_svc_users"("emailKey");
CREATE TABLE "new__svc_agent_turns" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "threadId" TEXT NOT NULL,
    "seq" INTEGER NOT NULL,
    "userText" TEXT NOT NULL,
    "messages" TEXT NOT NULL,
    "items" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "error" TEXT,
    "credits" INTEGER NOT NULL DEFAULT 0,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);
INSERT INTO "new__svc_agent_turns" ("createdAt", "error", "id", "items", "messages", "seq", "status", "threadId", "userText") SELECT "createdAt", "error", "id", "items", "messages", "seq", "status", "threadId", "userText" FROM "_svc_agent_turns";
DROP TABLE "_svc_agent_turns";
ALTER TABLE "new__svc_agent_turns" RENAME TO "_svc_agent_turns";
CREATE INDEX "_svc_agent_turns_threadId_idx" ON "_svc_agent_turns"("threadId");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE INDEX "_svc_user_providers_userId_idx" ON "_svc_user_providers"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "_svc_user_providers_provider_subject_key" ON "_svc_user_providers"("provider", "subject");

-- CreateIndex
CREATE INDEX "_svc_logs_time_idx" ON "_svc_logs"("time");

-- CreateIndex
CREATE INDEX "_svc_logs_reqId_idx" ON "_svc_logs"("reqId");
