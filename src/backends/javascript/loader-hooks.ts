/**
 * Module resolution hooks for JavaScript model workers: `import … from 'nereid/backend-utils'` in a model file
 * resolves to this server's own utils module wherever the model repository lives, with or without Nereid in a
 * node_modules folder above it. The worker registers these hooks before it imports the model.
 */

const UTILS_SPECIFIER = 'nereid/backend-utils';
const UTILS_URL = new URL('./utils.js', import.meta.url).href;

interface ResolveResult {
  url: string;
  shortCircuit?: boolean;
  format?: string | null;
}
type NextResolve = (specifier: string, context: unknown) => ResolveResult | Promise<ResolveResult>;

export function resolve(specifier: string, context: unknown, next: NextResolve): ResolveResult | Promise<ResolveResult> {
  if (specifier === UTILS_SPECIFIER) return { url: UTILS_URL, format: 'module', shortCircuit: true };
  return next(specifier, context);
}
