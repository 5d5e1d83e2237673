// Default-export form: the returned value is the 200 body. Nothing else, so the bench measures the call path.
export default async () => ({ pong: true });
