/**
 * @module The attachments of agent messages (DESIGN §7a, issue 34 §3; docs/agent.md "Attachments"):
 * uploads to `POST /api/_agent/uploads` (runtime/http/agent-uploads.ts) are stored in the app's blob
 * store under `_agent/<identityId>/<uploadId>/original`, with one row of `_svc_agent_uploads`
 * (`id`, `identityId`, `threadId` — null until a message uses it —, `name`, the sniffed `type`,
 * `size`, `storageKey`, `createdAt`). A `message`'s `attachments` name uploads of the session's own
 * identity (`claim`); the first turn that uses one binds it to its thread (`bind`), and it is
 * deleted, bytes and row, with that thread or with the identity. `history` shows an upload as
 * `{ uploadId, name, type, size, url }`, the url signed as blob URLs are (runtime/blobs/signed-url.ts).
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { pipeline, type Readable } from 'node:stream';
import { ATTACHMENT_DEFAULTS, type AttachmentSettings } from '../contract/settings.js';
import type { Database } from '../data/database.js';
import { HttpError } from '../errors.js';
import type { Logger } from '../log.js';
import { ident, join, sql } from '../query/sql.js';
import { UUID } from '../query/list-params.js';
import { toDate } from '../auth/store.js';
import { cleanFileName, meteredStream, readUpload } from '../blobs/multipart.js';
import type { BlobService } from '../blobs/service.js';
import type { TusTarget } from '../blobs/tus.js';
import { Sniffer } from './sniff.js';

const UPLOADS = ident('_svc_agent_uploads');

/** Most attachments one message may carry. */
export const MAX_ATTACHMENTS = 10;
/** Most uploads an identity may hold that no message used yet (a day later they are swept). */
export const MAX_UNSENT_UPLOADS = 50;

/** One stored upload. */
export interface UploadRow {
  id: string;
  identityId: string;
  threadId: string | null;
  name: string;
  type: string;
  size: number;
  storageKey: string;
  createdAt: Date;
}

/** An upload as the upload endpoint answers it. */
export interface UploadInfo {
  uploadId: string;
  name: string;
  type: string;
  size: number;
}

/** An attachment as `history` shows it: the upload and a signed URL that downloads its bytes. */
export interface AttachmentView extends UploadInfo {
  url: string;
}

/** A `message`'s `attachments` that cannot be used; the message is refused with this text in an `error` frame. */
export class AttachmentError extends Error {}

/** The folder of an upload's bytes in the blob store (its key is `…/original`). */
const prefixOf = (identityId: string, uploadId: string) => `_agent/${encodeURIComponent(identityId)}/${uploadId}/`;

type Raw = Record<string, unknown>;

function rowOf(r: Raw): UploadRow {
  return {
    id: String(r.id),
    identityId: String(r.identityId),
    threadId: r.threadId === null || r.threadId === undefined ? null : String(r.threadId),
    name: String(r.name),
    type: String(r.type),
    size: Number(r.size),
    storageKey: String(r.storageKey),
    createdAt: toDate(r.createdAt),
  };
}

/** The attachments of agent messages: their uploads, rows, bytes and deletion. */
export class AgentUploads {
  readonly settings: AttachmentSettings;

  constructor(
    private readonly db: Database,
    private readonly blobs: BlobService | undefined,
    settings: Partial<AttachmentSettings> | undefined,
    private readonly logger: Logger,
  ) {
    this.settings = { ...ATTACHMENT_DEFAULTS, ...settings };
  }

  private store() {
    if (!this.blobs) throw new HttpError('SERVICE_UNAVAILABLE', 'this server has no blob storage for attachments');
    return this.blobs.store;
  }

  /**
   * Refuses a new upload of an identity that holds `MAX_UNSENT_UPLOADS` unused ones already.
   * @throws HttpError RATE_LIMITED (429)
   */
  private async checkUnsent(identityId: string): Promise<void> {
    const [row] = await this.db.query<Raw>(
      sql`SELECT COUNT(*) AS ${ident('n')} FROM ${UPLOADS} WHERE ${ident('identityId')} = ${identityId} AND ${ident('threadId')} IS NULL`,
    );
    if (Number(row?.n ?? 0) >= MAX_UNSENT_UPLOADS)
      throw new HttpError('RATE_LIMITED', `this identity holds ${MAX_UNSENT_UPLOADS} uploads no message used yet: send or delete some first`);
  }

  /** Stores `bytes` as upload `id` of `identityId`, sniffing them on the way; nothing is left behind when they fail. */
  private async put(identityId: string, id: string, bytes: Readable): Promise<{ type: string; size: number }> {
    const store = this.store();
    const sniffer = new Sniffer();
    pipeline(bytes, sniffer, () => undefined);
    await store.put(`${prefixOf(identityId, id)}original`, sniffer, 'application/octet-stream');
    return { type: sniffer.type(), size: sniffer.bytes };
  }

  /**
   * Keeps a stored upload whose sniffed type is one of `types` (its row is written), else deletes its bytes.
   * @throws HttpError UNSUPPORTED_MEDIA_TYPE (415) for another type
   */
  private async admit(identityId: string, id: string, name: string, written: { type: string; size: number }): Promise<UploadInfo> {
    if (!(this.settings.types as string[]).includes(written.type)) {
      await this.store()
        .deletePrefix(prefixOf(identityId, id))
        .catch(() => undefined);
      throw new HttpError(
        'UNSUPPORTED_MEDIA_TYPE',
        `the file's bytes are ${written.type === 'application/octet-stream' ? 'of no accepted type' : written.type}; attachments may be ${this.settings.types.join(', ')}`,
      );
    }
    await this.db.query(
      sql`INSERT INTO ${UPLOADS} (${ident('id')}, ${ident('identityId')}, ${ident('threadId')}, ${ident('name')}, ${ident('type')}, ${ident('size')}, ${ident('storageKey')}, ${ident('createdAt')})
          VALUES (${id}, ${identityId}, ${null}, ${name}, ${written.type}, ${written.size}, ${`${prefixOf(identityId, id)}original`}, ${new Date()})`,
    );
    return { uploadId: id, name, type: written.type, size: written.size };
  }

  /**
   * Stores the one file of a multipart upload (a part named `file`) for `identityId`.
   * @returns `{ uploadId, name, type, size }`, `type` as sniffed from the bytes
   * @throws HttpError PAYLOAD_TOO_LARGE (413) past `maxBytes`; UNSUPPORTED_MEDIA_TYPE (415) for a body
   *   that is not multipart or bytes of a type not in `types`; VALIDATION_FAILED (400) for a malformed body;
   *   RATE_LIMITED (429) for an identity with `MAX_UNSENT_UPLOADS` unused uploads
   */
  async receive(identityId: string, req: IncomingMessage): Promise<UploadInfo> {
    await this.checkUnsent(identityId);
    const id = randomUUID();
    const written = await readUpload(
      req,
      this.settings.maxBytes,
      async (file) => ({ name: file.name, ...(await this.put(identityId, id, file.stream)) }),
      () => this.store().deletePrefix(prefixOf(identityId, id)),
    );
    return this.admit(identityId, id, written.name, written);
  }

  /**
   * The resumable uploads of `identityId` (tus, runtime/blobs/tus.ts): ids `agent.<identityId>.<hex>`,
   * at most `maxBytes`; the name is `Upload-Metadata` `filename` (or `name`); a finished upload is
   * kept like a multipart one and answered `{ uploadId, name, type, size }`.
   */
  tusTarget(identityId: string): TusTarget {
    return {
      idPrefix: `agent.${encodeURIComponent(identityId)}.`,
      maxBytes: this.settings.maxBytes,
      checkCreate: () => undefined,
      admit: () => this.checkUnsent(identityId),
      finish: async (source, upload) => {
        const id = randomUUID();
        const metered = meteredStream(this.settings.maxBytes);
        pipeline(source, metered, () => undefined);
        const written = await this.put(identityId, id, metered).catch(async (err: unknown) => {
          await this.store()
            .deletePrefix(prefixOf(identityId, id))
            .catch(() => undefined);
          throw err;
        });
        return this.admit(identityId, id, cleanFileName(upload.metadata?.filename ?? upload.metadata?.name ?? undefined), written);
      },
    };
  }

  /** The uploads of these ids (any identity), in no particular order. */
  async rows(ids: readonly string[]): Promise<UploadRow[]> {
    if (ids.length === 0) return [];
    const rows = await this.db.query<Raw>(
      sql`SELECT * FROM ${UPLOADS} WHERE ${ident('id')} IN (${join(
        ids.map((i) => sql`${i}`),
        ', ',
      )})`,
    );
    return rows.map(rowOf);
  }

  /** One upload, or null. */
  async row(id: string): Promise<UploadRow | null> {
    return UUID.test(id) ? ((await this.rows([id]))[0] ?? null) : null;
  }

  /**
   * The uploads a `message`'s `attachments` names, checked: an array (absent = none) of at most
   * `MAX_ATTACHMENTS` objects `{ uploadId }`, each a distinct upload of `identityId` that no other
   * thread than `threadId` holds. An upload of another identity is refused like an unknown one.
   * @returns the uploads in the order given
   * @throws AttachmentError naming what is wrong
   */
  async claim(identityId: string, value: unknown, threadId: string | null): Promise<UploadRow[]> {
    if (value === undefined || value === null) return [];
    if (!Array.isArray(value)) throw new AttachmentError('message.attachments must be an array of { uploadId }');
    if (value.length > MAX_ATTACHMENTS) throw new AttachmentError(`a message may carry at most ${MAX_ATTACHMENTS} attachments`);
    const ids: string[] = [];
    for (const [i, a] of value.entries()) {
      const uploadId = typeof a === 'object' && a !== null && !Array.isArray(a) ? (a as Raw).uploadId : undefined;
      if (typeof uploadId !== 'string' || !UUID.test(uploadId))
        throw new AttachmentError(`message.attachments[${i}] must be { uploadId } with the id of an upload`);
      if (ids.includes(uploadId.toLowerCase())) throw new AttachmentError(`message.attachments names upload ${uploadId} twice`);
      ids.push(uploadId.toLowerCase());
    }
    const found = new Map((await this.rows(ids)).map((r) => [r.id, r]));
    return ids.map((id) => {
      const row = found.get(id);
      if (!row || row.identityId !== identityId) throw new AttachmentError(`no upload ${id} of this identity`);
      if (row.threadId !== null && row.threadId !== threadId) throw new AttachmentError(`upload ${id} was sent in another thread; upload it again`);
      return row;
    });
  }

  /** Binds uploads to the thread a turn runs on (those already bound to another thread are left alone). */
  async bind(ids: readonly string[], threadId: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query(
      sql`UPDATE ${UPLOADS} SET ${ident('threadId')} = ${threadId} WHERE ${ident('threadId')} IS NULL AND ${ident('id')} IN (${join(
        ids.map((i) => sql`${i}`),
        ', ',
      )})`,
    );
  }

  /** The bytes of an upload. */
  async bytes(row: UploadRow): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const c of await this.store().get(row.storageKey)) chunks.push(c as Buffer);
    return Buffer.concat(chunks);
  }

  /** The path an upload is downloaded at (before signing). */
  static path(uploadId: string): string {
    return `/api/_agent/uploads/${uploadId}`;
  }

  /** The upload as `history` shows it, its url signed (unsigned without a signer: then it needs the owner's credentials). */
  view(row: UploadRow): AttachmentView {
    const url = `${AgentUploads.path(row.id)}?v=${row.id}`;
    return { uploadId: row.id, name: row.name, type: row.type, size: row.size, url: this.blobs?.signer ? this.blobs.signer.sign(url) : url };
  }

  /** Views of these uploads in the order given; ids whose upload is gone are left out. */
  async views(ids: readonly string[]): Promise<AttachmentView[]> {
    const found = new Map((await this.rows(ids)).map((r) => [r.id, r]));
    return ids.flatMap((id) => (found.has(id) ? [this.view(found.get(id)!)] : []));
  }

  /** Deletes uploads (rows, then bytes; a byte deletion that fails is logged). */
  private async remove(rows: UploadRow[]): Promise<void> {
    if (rows.length === 0) return;
    await this.db.query(
      sql`DELETE FROM ${UPLOADS} WHERE ${ident('id')} IN (${join(
        rows.map((r) => sql`${r.id}`),
        ', ',
      )})`,
    );
    for (const r of rows)
      await this.store()
        .deletePrefix(prefixOf(r.identityId, r.id))
        .catch((err: unknown) => this.logger.warn({ err, uploadId: r.id }, 'agent attachment bytes could not be deleted'));
  }

  /** Deletes an upload no message used (its owner took it back before sending). */
  async deleteUnused(row: UploadRow): Promise<void> {
    await this.remove([row]);
  }

  /** Deletes the uploads bound to a thread. */
  async deleteThread(threadId: string): Promise<void> {
    await this.remove((await this.db.query<Raw>(sql`SELECT * FROM ${UPLOADS} WHERE ${ident('threadId')} = ${threadId}`)).map(rowOf));
  }

  /** Deletes every upload of an identity, bound or not. */
  async deleteIdentity(identityId: string): Promise<void> {
    await this.remove((await this.db.query<Raw>(sql`SELECT * FROM ${UPLOADS} WHERE ${ident('identityId')} = ${identityId}`)).map(rowOf));
  }
}
