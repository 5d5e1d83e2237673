/**
 * @module A TCP proxy on loopback that sends each new connection to a target port that can be changed,
 * like a load balancer: the reliable Web PubSub recovery suites point it at another instance, and cut
 * the connections it carries to make a client recover through it.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';

export class TcpProxy {
  /** Where new connections go (a port on 127.0.0.1). */
  target: number;
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(target: number) {
    this.target = target;
    this.server = createServer((down) => {
      const up = connect(this.target, '127.0.0.1');
      for (const s of [down, up]) {
        this.sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => {
          this.sockets.delete(s);
          down.destroy();
          up.destroy();
        });
      }
      down.pipe(up).pipe(down);
    });
  }

  /** Starts listening on a free port; resolves to it. */
  async listen(): Promise<number> {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    return (this.server.address() as { port: number }).port;
  }

  /** Cuts every connection carried now (both ends see the TCP connection end); new ones are still taken. */
  cut(): void {
    for (const s of this.sockets) s.destroy();
  }

  close(): void {
    this.cut();
    this.server.close();
  }
}
