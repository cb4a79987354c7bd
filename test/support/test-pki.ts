// A throwaway certificate authority for TLS tests, made with openssl when a
// test starts: a CA, a server certificate for the given names and a client
// certificate, valid for a day. Nothing is committed, so no key material
// lives in the repository and no certificate expires under the tests.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findOrInstallOpenssl } from '../../src/stack/tools';

export interface TestPki {
  dir: string;
  /** PEM file paths. */
  ca: string;
  serverCert: string;
  serverKey: string;
  clientCert: string;
  clientKey: string;
  clientCommonName: string;
  remove(): void;
}

/** P-256 keys (PKCS#8, as Rust's TLS stack in the Temporal worker wants them). openssl is installed when missing (root) or named. */
export async function makeTestPki(serverNames: string[], clientCommonName = 'crawler-test-client'): Promise<TestPki> {
  const bin = await findOrInstallOpenssl();
  const openssl = (args: string[], cwd: string): void => {
    const res = spawnSync(bin, args, { cwd, encoding: 'utf8' });
    if (res.error || res.status !== 0) throw new Error(`openssl ${args[0]} failed: ${res.error?.message ?? res.stderr}`);
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'test-pki-'));
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  openssl(
    [
      'req',
      '-x509',
      ...ec,
      '-days',
      '1',
      '-subj',
      '/CN=durable-crawler test CA',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-addext',
      'basicConstraints=critical,CA:TRUE',
      '-addext',
      'keyUsage=critical,keyCertSign,cRLSign',
    ],
    dir,
  );
  const leaf = (name: string, cn: string, ext: string) => {
    openssl(['req', '-new', ...ec, '-subj', `/CN=${cn}`, '-keyout', `${name}.key`, '-out', `${name}.csr`], dir);
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    openssl(
      ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-sha256', '-extfile', `${name}.ext`, '-out', `${name}.pem`],
      dir,
    );
  };
  leaf('server', serverNames[0]!, `subjectAltName=${serverNames.map((n) => `DNS:${n}`).join(',')}\nextendedKeyUsage=serverAuth\n`);
  leaf('client', clientCommonName, 'extendedKeyUsage=clientAuth\n');
  const file = (f: string) => path.join(dir, f);
  return {
    dir,
    ca: file('ca.pem'),
    serverCert: file('server.pem'),
    serverKey: file('server.key'),
    clientCert: file('client.pem'),
    clientKey: file('client.key'),
    clientCommonName,
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}
