import { readFile } from 'node:fs/promises';
import { invalidArg } from '../../errors.js';
import type { CloudUrl } from './url.js';

/**
 * Credentials as Triton reads them. With TRITON_CLOUD_CREDENTIAL_PATH set, a JSON file holds them per path
 * prefix under "s3", "gs" and "as", the longest prefix of a repository's URL wins, and the environment is not
 * read. Without it, the environment variables each store's Triton code reads; what they leave unset falls to
 * the SDK's default chain (web identity, instance metadata, workload identity, managed identity).
 */
export interface S3Credential {
  readonly keyId?: string;
  readonly secretKey?: string;
  readonly sessionToken?: string;
  readonly region?: string;
  readonly profile?: string;
}

export interface GcsCredential {
  /** A service account key file. */
  readonly keyFile?: string;
}

export interface AsCredential {
  readonly account?: string;
  readonly key?: string;
  /** 'key' (the default), 'managed_identity' or 'default'. */
  readonly authType?: string;
  readonly clientId?: string;
}

export type Credential = S3Credential | GcsCredential | AsCredential;

export async function credentialFor(url: CloudUrl, env: NodeJS.ProcessEnv = process.env): Promise<Credential> {
  const file = env.TRITON_CLOUD_CREDENTIAL_PATH;
  if (file) return fromFile(url, file);
  return fromEnv(url, env);
}

function fromEnv(url: CloudUrl, env: NodeJS.ProcessEnv): Credential {
  const v = (k: string): string | undefined => (env[k] === undefined || env[k] === '' ? undefined : env[k]);
  if (url.scheme === 's3') {
    return { keyId: v('AWS_ACCESS_KEY_ID'), secretKey: v('AWS_SECRET_ACCESS_KEY'), sessionToken: v('AWS_SESSION_TOKEN'), region: v('AWS_DEFAULT_REGION'), profile: v('AWS_PROFILE') };
  }
  if (url.scheme === 'gs') return { keyFile: v('GOOGLE_APPLICATION_CREDENTIALS') };
  const key = v('AZURE_STORAGE_KEY');
  return { account: v('AZURE_STORAGE_ACCOUNT'), key, authType: v('AZURE_STORAGE_AUTH_TYPE') ?? (key ? 'key' : undefined), clientId: v('AZURE_STORAGE_CLIENT_ID') };
}

async function fromFile(url: CloudUrl, file: string): Promise<Credential> {
  let json: unknown;
  try {
    json = JSON.parse(await readFile(file, 'utf8'));
  } catch (e) {
    // The parser's message may quote the file's text, which holds secrets: name the file and the kind of fault only.
    const why = (e as NodeJS.ErrnoException).code ?? 'not valid JSON';
    throw invalidArg(`failed to read the cloud credential file named by TRITON_CLOUD_CREDENTIAL_PATH (${file}): ${why}`);
  }
  const section = (json as Record<string, unknown>)?.[url.scheme];
  const names = section && typeof section === 'object' ? Object.keys(section).sort((a, b) => b.length - a.length) : [];
  const name = names.find((n) => url.url.startsWith(n));
  if (name === undefined) throw invalidArg(`no credential in TRITON_CLOUD_CREDENTIAL_PATH matches ${url.url}`);
  const c = (section as Record<string, unknown>)[name];
  const s = (k: string): string | undefined => {
    const x = c && typeof c === 'object' ? (c as Record<string, unknown>)[k] : undefined;
    return typeof x === 'string' && x !== '' ? x : undefined;
  };
  if (url.scheme === 's3') return { keyId: s('key_id'), secretKey: s('secret_key'), sessionToken: s('session_token'), region: s('region'), profile: s('profile') };
  if (url.scheme === 'gs') return { keyFile: typeof c === 'string' && c !== '' ? c : undefined };
  const key = s('account_key');
  return { account: s('account_str'), key, authType: s('auth_type') ?? (key ? 'key' : undefined), clientId: s('client_id') };
}

/** The secret strings of a credential, to be scrubbed from any message that might echo them. */
export function secretsOf(c: Credential): string[] {
  const r = c as Record<string, string | undefined>;
  return [r.secretKey, r.sessionToken, r.key].filter((s): s is string => typeof s === 'string' && s.length >= 4);
}
