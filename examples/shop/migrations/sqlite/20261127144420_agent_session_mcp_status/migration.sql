-- AlterTable
ALTER TABLE "_svc_agent_sessions" ADD COLUMN "mcp" TEXT;
