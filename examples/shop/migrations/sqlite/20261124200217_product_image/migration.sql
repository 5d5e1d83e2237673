-- svc: drop full-text search objects
DROP TRIGGER IF EXISTS "Product__search_insert";
DROP TRIGGER IF EXISTS "Product__search_update";
DROP TRIGGER IF EXISTS "Product__search_delete";
DROP TABLE IF EXISTS "Product__search";
DROP TABLE IF EXISTS "Product__search_key";

-- AlterTable
ALTER TABLE "Product" ADD COLUMN "image" TEXT;

-- svc: full-text search objects
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
