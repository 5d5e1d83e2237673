/** The part of s3rver's API the tests use (the package ships no types). */
declare module 's3rver' {
  interface S3rverOptions {
    port?: number;
    address?: string;
    directory: string;
    silent?: boolean;
    configureBuckets?: { name: string; configs: unknown[] }[];
  }
  export default class S3rver {
    constructor(options: S3rverOptions);
    run(): Promise<{ address: string; port: number }>;
    /** Koa's middleware list (s3rver is a Koa application). */
    middleware: ((ctx: any, next: () => Promise<void>) => unknown)[];
    store: { getResourcePath(bucket: string, key: string | undefined, resource: string): string };
    close(): Promise<void>;
  }
}
