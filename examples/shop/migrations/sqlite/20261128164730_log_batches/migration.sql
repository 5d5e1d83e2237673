-- DropTable
PRAGMA foreign_keys=off;
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

-- Carry the log store over: one batch per entry (svc)
INSERT INTO "_svc_log_batches" ("id", "firstId", "first", "last", "instance", "count", "entries")
SELECT "id", "id", "time", "time", "instance", 1, json_array(json_object('id', "id", 'time', "time", 'kind', "kind", 'reqId', "reqId", 'method', "method", 'path', "path", 'status', "status", 'durationMs', "durationMs", 'identityId', "identityId", 'identityKind', "identityKind", 'severity', "severity", 'source', "source", 'message', "message")) FROM "_svc_logs";
DROP TABLE "_svc_logs";
