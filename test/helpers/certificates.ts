import { execFileSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** Certificates made with openssl for the TLS tests: a CA, and a server and a client certificate it signs. */

export function hasOpenssl(): boolean {
  try {
    execFileSync('openssl', ['version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Outside CI a missing openssl skips a TLS test with this reason; in CI, which installs it (.ci/run), the test runs and fails. */
export function opensslSkip(): string | false {
  return hasOpenssl() || process.env['CI'] === 'true' ? false : 'openssl is not installed: no certificates to test TLS with (install it, or run in CI where it is required)';
}

/**
 * Writes ca.crt, server.{key,crt} (for localhost and 127.0.0.1) and client.{key,crt} into `dir`, all signed by
 * the CA. EC keys: fast to make.
 */
export async function makeCertificates(dir: string): Promise<void> {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  ssl('req', '-x509', ...key, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=nereid-test-ca');
  await writeFile(join(dir, 'san.ext'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  for (const who of ['server', 'client']) {
    ssl('req', ...key, '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}`);
    ssl('x509', '-req', '-in', `${who}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${who}.crt`, '-days', '2', '-extfile', 'san.ext');
  }
}
