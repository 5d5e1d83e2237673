/**
 * @module The replay queue of one reliable Web PubSub connection (`json.reliable.webpubsub.azure.v1`;
 * ../shared/notes/realtime-protocols.md §1.5): each data message gets the next `sequenceId` (1, 2, …)
 * and stays queued until the client's cumulative `sequenceAck` covers it, so that a recovered socket
 * gets again what its client did not acknowledge. The queue holds at most `limitBytes`; a message pushed
 * out before it was acknowledged leaves a gap, and a connection with a gap cannot be recovered.
 */

/** One queued message: its sequence id and its whole frame (with `sequenceId`). */
interface Entry {
  seq: number;
  frame: string;
}

/** The unacknowledged messages of one reliable connection, bounded by bytes. */
export class ReplayQueue {
  private sequence = 0;
  private readonly entries: Entry[] = [];
  private bytes = 0;
  /** A message was dropped from the full queue before it was acknowledged: recovery is impossible. */
  private lost = false;

  constructor(
    /** Most characters of frames kept (svc.json `realtime.sendBufferBytes`); the newest is always kept. */
    private readonly limitBytes: number,
  ) {}

  /**
   * Numbers `frame` (a JSON object's text) with the next sequence id and queues it.
   * @returns the numbered frame to send
   */
  push(frame: string): string {
    const seq = ++this.sequence;
    const numbered = `${frame.slice(0, -1)},"sequenceId":${seq}}`;
    this.entries.push({ seq, frame: numbered });
    this.bytes += numbered.length;
    while (this.bytes > this.limitBytes && this.entries.length > 1) {
      this.bytes -= this.entries.shift()!.frame.length;
      this.lost = true;
    }
    return numbered;
  }

  /** Drops the entries up to `sequenceId` (cumulative); any other value than a number is ignored. */
  acknowledged(sequenceId: unknown): void {
    if (typeof sequenceId !== 'number' || Number.isNaN(sequenceId)) return;
    while (this.entries.length > 0 && this.entries[0].seq <= sequenceId) this.bytes -= this.entries.shift()!.frame.length;
  }

  /** The last sequence id given out. */
  get last(): number {
    return this.sequence;
  }

  /**
   * Continues a connection recovered from stored state (`wps-store.ts`): the next id is `seq + 1`, and
   * `pending` (numbered frames, oldest first) are the unacknowledged ones.
   */
  restore(seq: number, pending: { seq: number; frame: string }[]): void {
    this.sequence = seq;
    for (const e of pending) {
      this.entries.push(e);
      this.bytes += e.frame.length;
    }
  }

  /** False once a message was lost unacknowledged. */
  get recoverable(): boolean {
    return !this.lost;
  }

  /** The frames to send again to a recovered socket, oldest first. */
  pending(): string[] {
    return this.entries.map((e) => e.frame);
  }
}
