// A read of the database that must be current as of its call (the organization's authorization
// epoch, its highest engram revision), shared by the calls that come together: every request
// reads them, and under load most of a request's round trips were these few statements.
//
// A call never gets an answer read before it was made: with no read of its key in flight, it
// sends one; with one in flight (sent before the call, so possibly older than a write the caller
// saw acknowledged), it waits for it to settle and joins the next, which every call arriving
// meanwhile shares. An idle hub pays nothing; a busy one sends about one read per key per
// round trip instead of one per request.

interface KeyState<T> {
  inFlight?: Promise<T>;
  next?: Promise<T>;
}

export class FreshRead<T> {
  private readonly keys = new Map<string, KeyState<T>>();

  constructor(private readonly read: (key: string) => Promise<T>) {}

  /** The value as read by a statement sent after this call. */
  get(key: string): Promise<T> {
    let state = this.keys.get(key);
    if (!state) this.keys.set(key, (state = {}));
    if (!state.inFlight) return this.send(key, state);
    if (!state.next) {
      // Sent once the read in flight settles, whether it succeeded or failed.
      const sendNext = (): Promise<T> => {
        state.next = undefined;
        return this.send(key, state);
      };
      state.next = state.inFlight.then(sendNext, sendNext);
    }
    return state.next;
  }

  private send(key: string, state: KeyState<T>): Promise<T> {
    const sent = this.read(key);
    state.inFlight = sent;
    const settled = (): void => {
      if (state.inFlight !== sent) return;
      state.inFlight = undefined;
      if (!state.next) this.keys.delete(key);
    };
    sent.then(settled, settled);
    return sent;
  }
}
