-- AlterTable
ALTER TABLE "_svc_agent_turns" ADD COLUMN "attachments" TEXT;

-- CreateTable
CREATE TABLE "_svc_agent_uploads" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "identityId" TEXT NOT NULL,
    "threadId" TEXT,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "storageKey" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "_svc_agent_uploads_identityId_idx" ON "_svc_agent_uploads"("identityId");

-- CreateIndex
CREATE INDEX "_svc_agent_uploads_threadId_idx" ON "_svc_agent_uploads"("threadId");
