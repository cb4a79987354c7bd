// Which connection served a response, and when it is free again. undici's
// request API never shows the socket a response came on, yet the WARC
// records the peer's address and the HTTP version it negotiated: a client
// subclass tells each request which connection it went out on.
import { Client, type buildConnector, type Dispatcher } from 'undici';

/** Facts about the socket a client currently uses, captured at connect time. */
export interface ConnectionInfo {
  remoteAddress: string | null;
  alpnProtocol: string | null;
}

/**
 * Rides along as the request's `opaque` (undici's documented per-request user
 * slot, passed untouched from Agent to Pool to Client) so the Client that ends
 * up serving the request can tell us which connection it is. undici's request
 * API never exposes the socket, and keying by origin would be wrong once a
 * pool holds several connections to different addresses.
 */
export class ConnectionProbe {
  connection: { current: ConnectionInfo | null } | null = null;
}

class ProbingClient extends Client {
  readonly #connection: { current: ConnectionInfo | null };

  constructor(origin: string | URL, options: Client.Options, connection: { current: ConnectionInfo | null }) {
    super(origin, options);
    this.#connection = connection;
  }

  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    const opaque = (options as { opaque?: unknown }).opaque;
    if (opaque instanceof ConnectionProbe) opaque.connection = this.#connection;
    return super.dispatch(options, handler);
  }
}

// One h1 Client owns at most one socket at a time, so remembering the last
// socket its connector produced identifies the connection a response came on.
export function probingClientFactory(origin: string | URL, options: object): Dispatcher {
  const clientOptions = options as Client.Options;
  const baseConnect = clientOptions.connect as buildConnector.connector;
  const connection: { current: ConnectionInfo | null } = { current: null };
  const connect: buildConnector.connector = (connectOptions, callback) => {
    baseConnect(connectOptions, (...args) => {
      const socket = args[1];
      if (socket) {
        // Read now: remoteAddress is gone once the socket is destroyed.
        connection.current = {
          remoteAddress: socket.remoteAddress ?? null,
          alpnProtocol: 'alpnProtocol' in socket && typeof socket.alpnProtocol === 'string' ? socket.alpnProtocol : null,
        };
      }
      callback(...args);
    });
  };
  return new ProbingClient(origin, { ...clientOptions, connect }, connection);
}

/**
 * undici hands a finished h1 connection back to its pool one event-loop turn
 * after the response completes (a setImmediate in client-h1, to catch servers
 * that close despite keep-alive). A request dispatched before that finds the
 * client busy and makes the Pool open a second socket, so back-to-back
 * fetches to one host (redirect hops, a sequential crawl) would churn
 * connections. Waiting one turn ourselves lets the next request reuse it.
 */
export function connectionReleased(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
