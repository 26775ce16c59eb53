import { flagsInEffect, type FlagInEffect } from './flags.js';

/**
 * The flags in effect as the web console's server view shows them (GET /v2/nereid/server): those given, then
 * the others with their defaults (see flagsInEffect), with the values that are secrets hidden: the header
 * values of --http-restricted-api and --grpc-restricted-protocol, and any `password=`, `token=`, `secret=` or
 * `key=` setting of a flag such as --cache-config.
 */
export function shownFlags(argv: readonly string[]): FlagInEffect[] {
  return flagsInEffect(argv).map((f) => (f.given ? { ...f, value: hide(f.name, f.value) } : f));
}

const RESTRICTED = new Set(['http-restricted-api', 'grpc-restricted-protocol']);
const SECRET_SETTING = /((?:password|token|secret|key)=)[^,]*/gi;

function hide(name: string, value: string): string {
  if (RESTRICTED.has(name)) return value.replace(/^([^:]*:[^=]*=).*$/, '$1<hidden>');
  return value.replace(SECRET_SETTING, '$1<hidden>');
}
