import { invalidArg } from '../../errors.js';

/**
 * Repository URLs as Triton reads them: `s3://bucket/path`, `s3://host:port/bucket/path` and
 * `s3://https://host:port/bucket/path` (an S3-compatible store, addressed path-style, plain HTTP unless
 * https:// is written), `gs://bucket/path`, `as://account/container/path`. Slashes are tidied as Triton tidies
 * them: leading, trailing and doubled ones go.
 */
export type Scheme = 's3' | 'gs' | 'as';

export interface CloudUrl {
  readonly scheme: Scheme;
  /** The URL as given, tidied: what logs and messages name, and what credentials are matched against. */
  readonly url: string;
  /** The bucket (S3, GCS) or container (Azure). */
  readonly bucket: string;
  /** The repository's key prefix inside the bucket, without leading or trailing slash ('' for the bucket's root). */
  readonly prefix: string;
  /** S3 only: `http(s)://host:port` of an S3-compatible store. */
  readonly endpoint?: string;
  /** Azure only: the storage account. */
  readonly account?: string;
}

const SCHEME = /^(s3|gs|as):\/\//;
// Triton's pattern for a custom S3 endpoint: host and port, then a bucket in lower case.
const S3_ENDPOINT = /^(http:\/\/|https:\/\/|)([0-9a-zA-Z\-.]+):([0-9]+)\/([0-9a-z.\-]+)((?:\/[0-9a-zA-Z.\-_]+)*)$/;

export function isCloudUrl(path: string): boolean {
  return SCHEME.test(path);
}

export function parseCloudUrl(path: string): CloudUrl {
  const m = SCHEME.exec(path);
  if (!m) throw invalidArg(`'${path}' is not an s3://, gs:// or as:// URL`);
  const scheme = m[1] as Scheme;
  let rest = path.slice(m[0].length);
  let protocol = '';
  if (scheme === 's3') {
    const p = /^(https?:\/\/)/.exec(rest);
    if (p) {
      protocol = p[1]!;
      rest = rest.slice(protocol.length);
    }
  }
  const parts = rest.split('/').filter((s) => s !== '');
  if (parts.length === 0) throw invalidArg(`invalid bucket name in '${path}'`);
  const tidy = parts.join('/');
  const url = `${scheme}://${protocol}${tidy}`;
  if (scheme === 's3') {
    const e = S3_ENDPOINT.exec(protocol + tidy);
    if (e) {
      return { scheme, url, bucket: e[4]!, prefix: e[5]!.replace(/^\//, ''), endpoint: `${e[1] || 'http://'}${e[2]}:${e[3]}` };
    }
    if (protocol !== '') throw invalidArg(`'${path}': an S3 endpoint is written s3://${protocol}host:port/bucket/path`);
    return { scheme, url, bucket: parts[0]!, prefix: parts.slice(1).join('/') };
  }
  if (scheme === 'gs') return { scheme, url, bucket: parts[0]!, prefix: parts.slice(1).join('/') };
  if (parts.length < 2) throw invalidArg(`'${path}': an Azure repository is written as://account/container/path`);
  const host = parts[0]!;
  const suffix = host.lastIndexOf('.blob.core.windows.net');
  const account = suffix >= 0 ? host.slice(0, suffix) : host;
  return { scheme, url, account, bucket: parts[1]!, prefix: parts.slice(2).join('/') };
}
