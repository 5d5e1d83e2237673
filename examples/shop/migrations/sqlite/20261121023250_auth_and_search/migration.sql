-- CreateTable
CREATE TABLE "_svc_users" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "username" TEXT NOT NULL,
    "passwordHash" TEXT NOT NULL,
    "roles" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "_svc_service_accounts" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "name" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "secretHash" TEXT NOT NULL,
    "roles" TEXT NOT NULL,
    "admin" BOOLEAN NOT NULL DEFAULT false,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL
);

-- CreateTable
CREATE TABLE "_svc_refresh_tokens" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "tokenHash" TEXT NOT NULL,
    "familyId" TEXT NOT NULL,
    "subjectKind" TEXT NOT NULL,
    "subjectId" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "expiresAt" DATETIME NOT NULL,
    "usedAt" DATETIME,
    "revokedAt" DATETIME,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_svc_signing_keys" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "algorithm" TEXT NOT NULL,
    "privateJwk" TEXT NOT NULL,
    "publicJwk" TEXT NOT NULL,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP
);

-- CreateTable
CREATE TABLE "_log" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "message" TEXT NOT NULL,
    "severity" INTEGER NOT NULL,
    "username" TEXT,
    "reqId" TEXT,
    "createdAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" DATETIME NOT NULL,
    "createdBy" TEXT
);

-- CreateIndex
CREATE UNIQUE INDEX "_svc_users_username_key" ON "_svc_users"("username");

-- CreateIndex
CREATE UNIQUE INDEX "_svc_service_accounts_clientId_key" ON "_svc_service_accounts"("clientId");

-- CreateIndex
CREATE UNIQUE INDEX "_svc_refresh_tokens_tokenHash_key" ON "_svc_refresh_tokens"("tokenHash");

-- CreateIndex
CREATE INDEX "_svc_refresh_tokens_familyId_idx" ON "_svc_refresh_tokens"("familyId");

-- CreateIndex
CREATE INDEX "_log_createdBy_idx" ON "_log"("createdBy");

-- svc: full-text search objects
CREATE VIRTUAL TABLE "Customer__search" USING fts5("id" UNINDEXED, "c0", "c1", "c2", "c3", tokenize = 'unicode61 remove_diacritics 0');
CREATE TABLE "Customer__search_key" ("k" INTEGER PRIMARY KEY, "id" TEXT NOT NULL UNIQUE);
INSERT INTO "Customer__search_key" ("id") SELECT "id" FROM "Customer" ORDER BY "id";
INSERT INTO "Customer__search" (rowid, "id", "c0", "c1", "c2", "c3") SELECT k."k", t."id", t."name", t."email", t."country", t."notes" FROM "Customer" t JOIN "Customer__search_key" k ON k."id" = t."id";
CREATE TRIGGER "Customer__search_insert" AFTER INSERT ON "Customer" BEGIN
  INSERT INTO "Customer__search_key" ("id") VALUES (new."id");
  INSERT INTO "Customer__search" (rowid, "id", "c0", "c1", "c2", "c3") VALUES ((SELECT "k" FROM "Customer__search_key" WHERE "id" = new."id"), new."id", new."name", new."email", new."country", new."notes");
END;
CREATE TRIGGER "Customer__search_update" AFTER UPDATE OF "name", "email", "country", "notes" ON "Customer" BEGIN
  UPDATE "Customer__search" SET "c0" = new."name", "c1" = new."email", "c2" = new."country", "c3" = new."notes" WHERE rowid = (SELECT "k" FROM "Customer__search_key" WHERE "id" = new."id");
END;
CREATE TRIGGER "Customer__search_delete" AFTER DELETE ON "Customer" BEGIN
  DELETE FROM "Customer__search" WHERE rowid = (SELECT "k" FROM "Customer__search_key" WHERE "id" = old."id");
  DELETE FROM "Customer__search_key" WHERE "id" = old."id";
END;
CREATE VIRTUAL TABLE "Product__search" USING fts5("id" UNINDEXED, "c0", "c1", "c2", "c3", tokenize = 'unicode61 remove_diacritics 0');
CREATE TABLE "Product__search_key" ("k" INTEGER PRIMARY KEY, "id" TEXT NOT NULL UNIQUE);
INSERT INTO "Product__search_key" ("id") SELECT "id" FROM "Product" ORDER BY "id";
INSERT INTO "Product__search" (rowid, "id", "c0", "c1", "c2", "c3") SELECT k."k", t."id", t."sku", t."name", t."description", t."category" FROM "Product" t JOIN "Product__search_key" k ON k."id" = t."id";
CREATE TRIGGER "Product__search_insert" AFTER INSERT ON "Product" BEGIN
  INSERT INTO "Product__search_key" ("id") VALUES (new."id");
  INSERT INTO "Product__search" (rowid, "id", "c0", "c1", "c2", "c3") VALUES ((SELECT "k" FROM "Product__search_key" WHERE "id" = new."id"), new."id", new."sku", new."name", new."description", new."category");
END;
CREATE TRIGGER "Product__search_update" AFTER UPDATE OF "sku", "name", "description", "category" ON "Product" BEGIN
  UPDATE "Product__search" SET "c0" = new."sku", "c1" = new."name", "c2" = new."description", "c3" = new."category" WHERE rowid = (SELECT "k" FROM "Product__search_key" WHERE "id" = new."id");
END;
CREATE TRIGGER "Product__search_delete" AFTER DELETE ON "Product" BEGIN
  DELETE FROM "Product__search" WHERE rowid = (SELECT "k" FROM "Product__search_key" WHERE "id" = old."id");
  DELETE FROM "Product__search_key" WHERE "id" = old."id";
END;
