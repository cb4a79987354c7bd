// output.dir as a location (a folder, or s3://bucket/prefix checked by S3's rules and normalised), the
// S3 connection settings beside it as the schema checks them, how a worker's environment fills in what
// the settings leave out, and the AWS SDK's Node-version notice kept out of the crawler's output.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { CAMPAIGN_DEFAULTS, CampaignInputError, resolveCampaignSettings } from '../../src/config/campaign';
import { processSettings } from '../../src/config/env';
import { PROJECT_ROOT } from '../../src/config/project-root';
import { objectStoreFor, openObjectStore, parseOutputLocation, s3ConnectionFor, type S3Location } from '../../src/storage/output-location';
import { bucketNameProblem, MAX_S3_PREFIX_BYTES, s3EndpointProblem, s3RegionProblem } from '../../src/storage/output-location-rules';
import { S3ObjectStore } from '../../src/storage/s3-object-store';
import { StorageError } from '../../src/storage/storage-error';

const refusal = (dir: string): StorageError => {
  try {
    parseOutputLocation(dir);
  } catch (err) {
    expect(err).toBeInstanceOf(StorageError);
    expect((err as StorageError).code).toBe('INVALID_INPUT');
    return err as StorageError;
  }
  throw new Error(`${dir} was taken`);
};

describe('parseOutputLocation', () => {
  test('a path is a folder, as given', () => {
    for (const dir of ['crawl-output', '/srv/crawls/{campaign}', 'C:\\crawls\\x', './out']) expect(parseOutputLocation(dir)).toEqual({ kind: 'folder', dir });
  });

  test.each([
    ['s3://crawl', 'crawl', ''],
    ['s3://crawl/', 'crawl', ''],
    ['s3://crawl/runs', 'crawl', 'runs/'],
    ['s3://crawl/runs/', 'crawl', 'runs/'],
    ['s3://crawl//runs///2026/', 'crawl', 'runs/2026/'],
    ['S3://my.bucket-1/a b/é', 'my.bucket-1', 'a b/é/'],
    ['s3://crawl/runs/{campaign}', 'crawl', 'runs/{campaign}/'],
  ])('%s is bucket %s, prefix %p', (dir, bucket, prefix) => {
    expect(parseOutputLocation(dir)).toEqual({ kind: 's3', bucket, prefix, url: `s3://${bucket}/${prefix}` });
  });

  test.each([
    ['s3://', /names no bucket/],
    ['s3:///runs', /names no bucket/],
    ['s3://ab/x', /bucket name "ab" of 2 characters; S3 takes 3 to 63/],
    [`s3://${'a'.repeat(64)}`, /of 64 characters/],
    ['s3://Crawl/x', /lowercase letters, digits, dots and hyphens only/],
    ['s3://crawl_1/x', /lowercase letters, digits, dots and hyphens only/],
    ['s3://-crawl/x', /begin and end with a letter or digit/],
    ['s3://crawl./x', /begin and end with a letter or digit/],
    ['s3://cr..awl/x', /two dots in a row/],
    ['s3://192.168.5.4/x', /the form of an IP address/],
    ['s3://xn--crawl/x', /starting with xn-- are reserved/],
    ['s3://crawl-s3alias/x', /ending with -s3alias are reserved/],
    ['s3://{campaign}/x', /\{campaign\} in the bucket name .* belongs in the prefix/],
    ['s3://127.0.0.1:8333/crawl', /names a server \("127.0.0.1:8333"\) where the bucket goes/],
    ['s3://crawl/a/../b', /"\." or "\.\." segment/],
    ['s3://crawl/./b', /"\." or "\.\." segment/],
    ['s3://crawl/a?b=1', /"\?" in the prefix/],
    ['s3://crawl/a\nb', /control character/],
    ['gs://crawl/x', /is a gs:\/\/ URL; an output location is a folder or s3:\/\/bucket\/prefix/],
    ['https://crawl.test/x', /is a https:\/\/ URL/],
  ])('%j is refused: %s', (dir, why) => {
    expect(refusal(dir).message).toMatch(why);
  });

  test('a prefix is at most 512 bytes of UTF-8, its slash included', () => {
    const prefix = `${'é'.repeat(MAX_S3_PREFIX_BYTES / 2 - 1)}a`;
    expect((parseOutputLocation(`s3://crawl/${prefix}`) as S3Location).prefix).toBe(`${prefix}/`);
    expect(refusal(`s3://crawl/${prefix}b`).message).toMatch(`has a prefix of ${MAX_S3_PREFIX_BYTES + 1} bytes; at most ${MAX_S3_PREFIX_BYTES}`);
  });

  test('credentials in the location are refused without being echoed', () => {
    const err = refusal('s3://AKIAEXAMPLE:hunter2@crawl/x');
    expect(err.message).toMatch(/holds user:password@ .*default chain/);
    expect(err.message).not.toMatch(/hunter2|AKIAEXAMPLE/);
  });

  test("S3's bucket rules accept the names AWS's own examples use", () => {
    for (const name of ['docexamplebucket1', 'log-delivery-march-2020', 'my-hosted-content', 'www.example.com', 'a1b', '123']) expect(bucketNameProblem(name)).toBeNull();
  });
});

describe('the campaign settings', () => {
  const resolve = (output: object, campaignId = 'c1') => resolveCampaignSettings({ seeds: ['http://a.test/'], output } as never, campaignId);
  const problems = (output: object, campaignId = 'c1'): string[] => {
    try {
      resolve(output, campaignId);
    } catch (err) {
      if (err instanceof CampaignInputError) return err.problems;
      throw err;
    }
    return [];
  };

  test('an s3:// output.dir and its connection are taken, {campaign} replaced in the prefix', () => {
    const s = resolve({ dir: 's3://crawl/runs/{campaign}', s3: { endpoint: 'https://s3.store.test:8443/base', region: 'garage', pathStyle: true } }, 'nightly-1');
    expect(s.output).toEqual({
      dir: 's3://crawl/runs/nightly-1',
      warcKeepSecrets: false,
      s3: { endpoint: 'https://s3.store.test:8443/base', region: 'garage', pathStyle: true },
      upload: CAMPAIGN_DEFAULTS.output.upload,
    });
    expect(resolve({ dir: 's3://crawl', s3: { endpoint: 'http://[::1]:8333' } }).output.s3).toEqual({ endpoint: 'http://[::1]:8333', region: null, pathStyle: false });
  });

  test('an s3:// output.dir that does not parse is refused at the edge, with the reason', () => {
    expect(problems({ dir: 's3://Crawl/x' })).toEqual(['output.dir has a bucket name "Crawl" S3 refuses: lowercase letters, digits, dots and hyphens only']);
    expect(problems({ dir: 'gs://crawl/x' })).toEqual(['output.dir is a gs:// URL; an output location is a folder or s3://bucket/prefix']);
    expect(problems({ dir: 7 })).toEqual(['output.dir must be a folder or s3://bucket/prefix (got 7)']);
    // Checked with the campaign ID in place: an ID of ".." would be a segment of its own.
    expect(problems({ dir: 's3://crawl/runs/{campaign}' }, '..')).toEqual([expect.stringMatching(/^output.dir has a "." or ".." segment/)]);
    expect(problems({ dir: '/srv/{campaign}' }, '..')).toEqual([]);
    // The placeholder in the bucket is named as such, not as the bucket the ID would make.
    expect(problems({ dir: 's3://{campaign}/x' }, 'crawl-1')).toEqual([expect.stringMatching(/^output.dir has \{campaign\} in the bucket name/)]);
  });

  test('output.s3 fields are checked, each with its own words, and never echo credentials', () => {
    expect(problems({ dir: 's3://crawl', s3: { endpoint: 'store.test:8333', region: 'us east', pathStyle: 'yes' } })).toEqual([
      'output.s3.endpoint must be an http:// or https:// URL of an S3-compatible endpoint, such as http://127.0.0.1:8333 (got "store.test:8333")',
      'output.s3.region must be a region name such as us-east-1 (letters, digits, dots, hyphens, underscores; at most 64) (got "us east")',
      'output.s3.pathStyle must be true or false (got "yes")',
    ]);
    const withKey = problems({ dir: 's3://crawl', s3: { endpoint: 'http://AKIAEXAMPLE:hunter2@store.test' } });
    expect(withKey).toEqual([expect.stringMatching(/^output.s3.endpoint holds user:password@/)]);
    expect(withKey.join()).not.toMatch(/hunter2|AKIAEXAMPLE/);
    expect(problems({ dir: 's3://crawl', s3: 'http://store.test' })).toEqual([expect.stringMatching(/^output.s3 must be an object such as/)]);
    // Keys in the settings are refused, their names said, their values not.
    const keys = problems({ dir: 's3://crawl', s3: { accessKeyId: 'AKIAEXAMPLE', secretAccessKey: 'hunter2' } });
    expect(keys).toEqual([expect.stringMatching(/^output.s3 has "accessKeyId", "secretAccessKey": .*never from settings$/)]);
    expect(keys.join()).not.toMatch(/hunter2|AKIAEXAMPLE/);
  });

  test.each([
    ['http://127.0.0.1:8333', null],
    ['https://s3.eu-west-3.amazonaws.com', null],
    ['http://[fd00::1]:9000/', null],
    ['http://store.test:0', /port 0; ports are 1 to 65535/],
    ['http://store.test:70000', /port 70000/],
    ['http://store.test/a?b', /must be an http/],
    ['http://-store.test', /no valid host name/],
    ['http://store test', /must not contain spaces/],
  ])('endpoint %s', (endpoint, why) => {
    const p = s3EndpointProblem(endpoint);
    if (why === null) expect(p).toBeNull();
    else expect(p).toMatch(why);
  });

  test('regions: AWS names and the names self-hosted stores use; nothing with spaces or slashes', () => {
    for (const r of ['us-east-1', 'eu-west-3', 'garage', 'local_1']) expect(s3RegionProblem(r)).toBeNull();
    for (const r of ['', 'us east', 'a/b', '-x', 'x'.repeat(65)]) expect(s3RegionProblem(r)).not.toBeNull();
  });
});

describe("a worker's connection: the settings, else its AWS variables", () => {
  test('the settings win over the environment', () => {
    const env = { AWS_ENDPOINT_URL_S3: 'http://env-s3.test', AWS_ENDPOINT_URL: 'http://env.test', AWS_REGION: 'eu-west-3' };
    expect(s3ConnectionFor({ endpoint: 'http://set.test:8333', region: 'garage', pathStyle: true }, env)).toEqual({
      endpoint: 'http://set.test:8333',
      region: 'garage',
      pathStyle: true,
    });
  });

  test('AWS_ENDPOINT_URL_S3 before AWS_ENDPOINT_URL; AWS_REGION; path style only from the settings', () => {
    expect(s3ConnectionFor({}, { AWS_ENDPOINT_URL_S3: 'http://env-s3.test', AWS_ENDPOINT_URL: 'http://env.test', AWS_REGION: 'eu-west-3' })).toEqual({
      endpoint: 'http://env-s3.test',
      region: 'eu-west-3',
      pathStyle: false,
    });
    expect(s3ConnectionFor({ endpoint: null, region: null, pathStyle: null }, { AWS_ENDPOINT_URL: 'http://env.test' })).toEqual({
      endpoint: 'http://env.test',
      region: 'us-east-1',
      pathStyle: false,
    });
  });

  test('an endpoint with no region anywhere signs as us-east-1; AWS itself with none is left to the SDK', () => {
    expect(s3ConnectionFor({ endpoint: 'http://set.test' }, {})).toEqual({ endpoint: 'http://set.test', region: 'us-east-1', pathStyle: false });
    expect(s3ConnectionFor(null, {})).toEqual({ pathStyle: false });
    expect(s3ConnectionFor(undefined, { AWS_REGION: 'ap-south-1' })).toEqual({ region: 'ap-south-1', pathStyle: false });
  });

  test('a malformed variable is refused, named, without echoing credentials', () => {
    expect(() => s3ConnectionFor({}, { AWS_ENDPOINT_URL_S3: 'store.test' })).toThrow(/^AWS_ENDPOINT_URL_S3 must be an http/);
    expect(() => s3ConnectionFor({}, { AWS_REGION: 'eu west' })).toThrow(/^AWS_REGION must be a region name/);
    expect(() => s3ConnectionFor({}, { AWS_ENDPOINT_URL: 'http://AKIAEXAMPLE:hunter2@store.test' })).toThrow(/^AWS_ENDPOINT_URL holds user:password@/);
    expect(() => s3ConnectionFor({}, { AWS_ENDPOINT_URL: 'http://AKIAEXAMPLE:hunter2@store.test' })).not.toThrow(/hunter2/);
    // Read through the settings table, so a worker with a bad one stops at start, naming it.
    expect(() => processSettings({ AWS_REGION: 'eu west' })).toThrow(/^AWS_REGION must be a region name/);
  });

  test('objectStoreFor: a folder is written in place (no store); a bucket location opens an S3 store named by its location', () => {
    expect(objectStoreFor('/srv/crawls/c1')).toBeNull();
    const store = objectStoreFor('s3://crawl//runs/c1', { endpoint: 'http://127.0.0.1:1', pathStyle: true });
    expect(store).toBeInstanceOf(S3ObjectStore);
    expect(store!.location).toBe('s3://crawl/runs/c1/');
    (store as S3ObjectStore).destroy();
    expect(() => objectStoreFor('s3://Crawl')).toThrow(StorageError);
  });

  test('keys are relative, "/"-separated and without empty, "." or ".." segments', async () => {
    const store = openObjectStore(parseOutputLocation('s3://crawl/x') as S3Location, { endpoint: 'http://127.0.0.1:1' });
    try {
      for (const key of ['', '/warc/a', 'warc//a', 'warc/../a', './a', 'warc/a/', 'a\nb']) {
        await expect(store.size(key)).rejects.toMatchObject({ code: 'INVALID_INPUT' });
        await expect(store.putBytes(key, Buffer.from('x'))).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      }
      await expect(store.read('warc/a', { start: -1 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
      await expect(store.read('warc/a', { start: 0, length: 1.5 })).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    } finally {
      store.destroy();
    }
  });
});

test("the AWS SDK's notice about Node versions does not reach the crawler's output", () => {
  const tsx = path.join(PROJECT_ROOT, 'node_modules', 'tsx', 'dist');
  const env = { ...process.env };
  delete env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED;
  const stderrOf = (script: string) =>
    spawnSync(process.execPath, ['--require', path.join(tsx, 'preflight.cjs'), '--import', pathToFileURL(path.join(tsx, 'loader.mjs')).href, '-e', script], {
      cwd: PROJECT_ROOT,
      env,
      encoding: 'utf8',
    }).stderr;
  const ours = stderrOf(`require(${JSON.stringify(path.join(PROJECT_ROOT, 'src/storage/s3-client.ts'))}).newS3Client({ region: 'us-east-1' }).destroy();`);
  expect(ours).not.toContain('NodeVersionSupportWarning');
  // The SDK's client built straight: the notice is there on the Node versions it names (below 22), so the check above means something.
  const theirs = stderrOf(`const { S3Client } = require('@aws-sdk/client-s3'); new S3Client({ region: 'us-east-1' }).destroy();`);
  if (Number(process.versions.node.split('.')[0]) < 22) expect(theirs).toContain('NodeVersionSupportWarning');
});
