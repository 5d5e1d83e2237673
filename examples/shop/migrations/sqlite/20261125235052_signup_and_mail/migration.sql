-- CreateTable
CREATE TABLE "_svc_mail_tokens" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tokenHash" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_svc_mail_sent" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "address" TEXT NOT NULL,
    "purpose" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
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
    "emailVerified" BOOLEAN NOT NULL DEFAULT false
);
INSERT INTO "new__svc_users" ("createdAt", "disabledAt", "id", "passwordHash", "roles", "updatedAt", "username") SELECT "createdAt", "disabledAt", "id", "passwordHash", "roles", "updatedAt", "username" FROM "_svc_users";
DROP TABLE "_svc_users";
ALTER TABLE "new__svc_users" RENAME TO "_svc_users";
CREATE UNIQUE INDEX "_svc_users_username_key" ON "_svc_users"("username");
CREATE UNIQUE INDEX "_svc_users_emailKey_key" ON "_svc_users"("emailKey");
PRAGMA foreign_keys=ON;
PRAGMA defer_foreign_keys=OFF;

-- CreateIndex
CREATE UNIQUE INDEX "_svc_mail_tokens_tokenHash_key" ON "_svc_mail_tokens"("tokenHash");

-- CreateIndex
CREATE INDEX "_svc_mail_tokens_userId_idx" ON "_svc_mail_tokens"("userId");

-- CreateIndex
CREATE INDEX "_svc_mail_sent_address_idx" ON "_svc_mail_sent"("address");
