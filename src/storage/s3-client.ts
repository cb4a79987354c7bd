// Every S3 client the crawler makes comes from here, so the AWS SDK is set up
// one way: today, without the SDK's notice about Node versions.
import { S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';

/**
 * The SDK's own switch for its NodeVersionSupportWarning (a process warning,
 * emitted once per process when a client is built on Node < 22, saying later
 * SDK releases will need Node 22). The crawler supports Node ≥ 20.18 and pins
 * the SDK through its lock file, so the notice is nothing an operator can act
 * on and would only reach their logs. The SDK reads the variable each time a
 * client is built; one the operator set is left as it is.
 */
export const SDK_NODE_WARNING_SWITCH = 'AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED';

export function newS3Client(config: S3ClientConfig): S3Client {
  // A switch of the SDK's, set for the SDK, not a setting of ours read (what the rule is for).
  // eslint-disable-next-line no-restricted-syntax
  process.env[SDK_NODE_WARNING_SWITCH] ??= 'true';
  return new S3Client(config);
}
