-- DropTable
PRAGMA foreign_keys=off;
DROP TABLE "_svc_logs";
PRAGMA foreign_keys=on;

-- CreateTable
CREATE TABLE "_svc_log_batches" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "firstId" TEXT NOT NULL,
    "first" DATETIME NOT NULL,
    "last" DATETIME NOT NULL,
    "instance" TEXT NOT NULL,
    "count" INTEGER NOT NULL,
    "entries" TEXT NOT NULL
);

-- CreateIndex
CREATE INDEX "_svc_log_batches_last_idx" ON "_svc_log_batches"("last");
