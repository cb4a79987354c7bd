// Clients and workers reach a Temporal frontend that demands mutual TLS,
// using nothing but the TEMPORAL_TLS_* settings. The frontend is the test
// stack's dev server behind a TLS terminator that accepts only clients with
// a certificate from a test CA made at start (test/support/test-pki.ts), the way a TLS-only
// cluster or Temporal Cloud would: a setting that never reached a
// connection fails here.
import fs from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';
import { WorkflowFailedError } from '@temporalio/client';
import { connectClient } from '../../src/temporal/connect';
import { startCrawlerWorker } from '../../src/worker/crawler-worker';
import { startCampaign } from '../../src/temporal/campaign-client';
import { makeTestPki, type TestPki } from '../support/test-pki';

jest.setTimeout(120_000);

let pki: TestPki;
let TLS_ENV: Record<string, string>;

let proxy: tls.Server;
let proxyAddress: string;
/** Common names of client certificates the proxy accepted, one per connection. */
const accepted: string[] = [];
const savedEnv = { ...process.env };

beforeAll(async () => {
  pki = await makeTestPki(['temporal.test']);
  TLS_ENV = {
    TEMPORAL_TLS_CLIENT_CERT_PATH: pki.clientCert,
    TEMPORAL_TLS_CLIENT_KEY_PATH: pki.clientKey,
    TEMPORAL_TLS_SERVER_CA_CERT_PATH: pki.ca,
    // The proxy listens on 127.0.0.1; its certificate is for this name.
    TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
  };
  const [host, port] = process.env.TEMPORAL_ADDRESS!.split(':');
  proxy = tls.createServer(
    {
      key: fs.readFileSync(pki.serverKey),
      cert: fs.readFileSync(pki.serverCert),
      ca: fs.readFileSync(pki.ca),
      requestCert: true,
      rejectUnauthorized: true,
      ALPNProtocols: ['h2'],
    },
    (socket) => {
      accepted.push(String(socket.getPeerCertificate().subject?.CN));
      const upstream = net.connect(Number(port), host);
      socket.pipe(upstream).pipe(socket);
      const close = () => {
        socket.destroy();
        upstream.destroy();
      };
      socket.on('error', close);
      upstream.on('error', close);
      socket.on('close', close);
      upstream.on('close', close);
    },
  );
  proxy.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  proxyAddress = `127.0.0.1:${(proxy.address() as net.AddressInfo).port}`;
});

afterEach(() => {
  for (const k of Object.keys(process.env)) if (!(k in savedEnv)) delete process.env[k];
  Object.assign(process.env, savedEnv);
});

afterAll(async () => {
  await new Promise<void>((resolve) => proxy.close(() => resolve()));
  pki?.remove();
});

test('a client with the mTLS settings gets through; without its certificate it does not', async () => {
  Object.assign(process.env, TLS_ENV);
  const before = accepted.length;
  const client = await connectClient(proxyAddress);
  try {
    const info = await client.workflowService.getSystemInfo({});
    expect(info.serverVersion).toBeTruthy();
  } finally {
    await client.connection.close();
  }
  expect(accepted.slice(before)).toContain(pki.clientCommonName);

  // Same CA and name, no client pair: the terminator refuses the handshake.
  delete process.env.TEMPORAL_TLS_CLIENT_CERT_PATH;
  delete process.env.TEMPORAL_TLS_CLIENT_KEY_PATH;
  await expect(connectClient(proxyAddress).then((c) => c.workflowService.getSystemInfo({}))).rejects.toThrow();
});

test('plaintext settings cannot talk to the TLS frontend', async () => {
  await expect(connectClient(proxyAddress).then((c) => c.workflowService.getSystemInfo({}))).rejects.toThrow();
});

test('a worker polls through mTLS and runs a campaign workflow task', async () => {
  const taskQueue = `test-tls-${process.pid}`;
  const before = accepted.length;
  const worker = await startCrawlerWorker({
    temporalAddress: proxyAddress,
    taskQueue,
    temporalTlsCertPath: TLS_ENV.TEMPORAL_TLS_CLIENT_CERT_PATH,
    temporalTlsKeyPath: TLS_ENV.TEMPORAL_TLS_CLIENT_KEY_PATH,
    temporalTlsCaPath: TLS_ENV.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
    temporalTlsServerName: TLS_ENV.TEMPORAL_TLS_SERVER_NAME,
    logLevel: 'silent',
  });
  try {
    // The worker's connection (which its activities' Client shares) came through the terminator with our certificate.
    expect(accepted.slice(before).filter((cn) => cn === pki.clientCommonName).length).toBeGreaterThanOrEqual(1);
    // A campaign whose input the workflow itself rejects: failing it takes
    // one workflow task, which only a worker polling through the TLS
    // connection can have run.
    const client = await connectClient(process.env.TEMPORAL_ADDRESS!);
    try {
      const handle = await startCampaign(client, taskQueue, { campaignId: `tls-${process.pid}-${Date.now()}`, seeds: [], output: { dir: '/nonexistent' } });
      const err = await handle.result().then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect(String((err as WorkflowFailedError).cause?.message)).toMatch(/seeds must be a non-empty list/);
    } finally {
      await client.connection.close();
    }
  } finally {
    await worker.shutdown();
  }
});
