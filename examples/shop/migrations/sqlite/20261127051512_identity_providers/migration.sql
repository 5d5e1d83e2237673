-- CreateTable
CREATE TABLE "_svc_user_providers" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "userId" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "subject" TEXT NOT NULL,
    "email" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateIndex
CREATE INDEX "_svc_user_providers_userId_idx" ON "_svc_user_providers"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "_svc_user_providers_provider_subject_key" ON "_svc_user_providers"("provider", "subject");
