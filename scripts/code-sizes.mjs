// Prints the classes longer than 400 lines and the functions (declarations, methods, arrow functions with a
// block body) longer than 80 lines under src/, largest first, to keep the hubs from growing back.
// Usage: node scripts/code-sizes.mjs [--classes N] [--functions N] [--all] [folder or file]
// A line count runs from the line that names the class or function to the line of its closing brace, nested
// functions included. The TypeScript in node_modules is the native compiler, with no JavaScript API, so the
// source is read by a small lexer (comments, strings, templates and regular expressions blanked out) and
// braces are matched; exits 1 when something is over a limit.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  if (i < 0) return fallback;
  const [value] = args.splice(i, 2).slice(1);
  return Number(value);
};
const classLimit = option('--classes', 400);
const functionLimit = option('--functions', 80);
const all = args.includes('--all');
const folder = join(root, args.find((a) => !a.startsWith('--')) ?? 'src');

/** Keywords before `(` … `)` `{` that open a block, not a function body. */
const BLOCK_KEYWORDS = new Set(['if', 'for', 'while', 'switch', 'catch', 'with', 'return', 'typeof', 'await']);
/** A `/` after one of these starts a regular expression, not a division. */
const REGEX_AFTER = new Set(['return', 'typeof', 'case', 'do', 'else', 'in', 'of', 'new', 'delete', 'void', 'throw', 'yield', 'await']);

/** The source with comments, string and template text and regular expressions turned to spaces, lines kept. */
export function blank(src) {
  const out = src.split('');
  const wipe = (from, to) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  const templateDepth = []; // brace depth at which each open `${` resumes its template
  let depth = 0;
  let i = 0;
  let lastSignificant = '';
  let lastWord = '';
  const n = src.length;
  const template = (start) => {
    // from just after a backtick or a `}` closing `${`: runs to the closing backtick or the next `${`
    let k = start;
    while (k < n) {
      if (src[k] === '\\') k += 2;
      else if (src[k] === '`') { wipe(start, k); return k + 1; }
      else if (src[k] === '$' && src[k + 1] === '{') { wipe(start, k); templateDepth.push(depth); depth++; return k + 2; }
      else k++;
    }
    wipe(start, n);
    return n;
  };
  while (i < n) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '/') {
      const end = src.indexOf('\n', i);
      const stop = end < 0 ? n : end;
      wipe(i, stop);
      i = stop;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      const stop = end < 0 ? n : end + 2;
      wipe(i, stop);
      i = stop;
    } else if (c === '"' || c === "'") {
      let k = i + 1;
      while (k < n && src[k] !== c && src[k] !== '\n') k += src[k] === '\\' ? 2 : 1;
      wipe(i + 1, k);
      i = k + 1;
      lastSignificant = c;
    } else if (c === '`') {
      i = template(i + 1);
      lastSignificant = '`';
    } else if (c === '/' && (/[(,=:[!&|?{};+\-*%<>~^]/.test(lastSignificant) || lastSignificant === '' || REGEX_AFTER.has(lastWord))) {
      let k = i + 1;
      let inClass = false;
      while (k < n && src[k] !== '\n') {
        if (src[k] === '\\') { k += 2; continue; }
        if (src[k] === '[') inClass = true;
        else if (src[k] === ']') inClass = false;
        else if (src[k] === '/' && !inClass) break;
        k++;
      }
      wipe(i + 1, k);
      i = k + 1;
      lastSignificant = '/';
      lastWord = '';
    } else {
      if (c === '{') depth++;
      else if (c === '}') {
        depth--;
        if (templateDepth.length > 0 && templateDepth[templateDepth.length - 1] === depth) {
          templateDepth.pop();
          i = template(i + 1);
          lastSignificant = '`';
          continue;
        }
      }
      if (/[A-Za-z0-9_$]/.test(c)) {
        let k = i;
        while (k < n && /[A-Za-z0-9_$]/.test(src[k])) k++;
        lastWord = src.slice(i, k);
        lastSignificant = 'a';
        i = k;
        continue;
      }
      if (!/\s/.test(c)) { lastSignificant = c; lastWord = ''; }
      i++;
    }
  }
  return out.join('');
}

/** Index of the bracket matching the closing one at `at`, walking backwards; -1 when unbalanced. */
function openerOf(code, at, open, close) {
  let d = 0;
  for (let k = at; k >= 0; k--) {
    if (code[k] === close) d++;
    else if (code[k] === open && --d === 0) return k;
  }
  return -1;
}

/** What the `{` at `at` opens: { kind: 'class' | 'function', name, start } or null for any other block. */
function classify(code, at) {
  let k = at - 1;
  while (k >= 0 && /\s/.test(code[k])) k--;
  if (code[k] === '>' && code[k - 1] === '=') return arrow(code, k - 1);
  // after a colon: a type literal (a return type's, say) or an object literal's value, never a body
  if (code[k] === ':') return null;
  const head = code.slice(Math.max(0, code.lastIndexOf('\n', Math.max(0, at - 400))), at);
  const cls = /\bclass(?:\s+([A-Za-z_$][\w$]*))?[^;{}()]*$/.exec(head);
  if (cls) return { kind: 'class', name: cls[1] ?? '(anonymous)', start: at - head.length + cls.index };
  // a return type annotation may sit between `)` and `{`: `): Promise<void> {`, `): { x: number } {`
  const close = returnTypeStart(code, k, at);
  if (close < 0) return null;
  const open = openerOf(code, close, '(', ')');
  if (open < 0) return null;
  let j = open - 1;
  while (j >= 0 && /\s/.test(code[j])) j--;
  if (code[j] === '>') j = openerOf(code, j, '<', '>') - 1; // type parameters
  while (j >= 0 && /\s/.test(code[j])) j--;
  let e = j + 1;
  while (j >= 0 && /[\w$]/.test(code[j])) j--;
  const name = code.slice(j + 1, e);
  if (name === '' || BLOCK_KEYWORDS.has(name)) {
    if (name === '' && /\bfunction\s*\*?\s*$/.test(code.slice(Math.max(0, j - 20), j + 1))) {
      return { kind: 'function', name: '(anonymous function)', start: j };
    }
    return null;
  }
  return { kind: 'function', name, start: j + 1 };
}

/**
 * The `)` that closes a parameter list before `from` (the last character before a body's `{` or an arrow's
 * `=>`), over a return type annotation if there is one; -1 when there is none. A `{` that itself follows `):`
 * opens a type literal, not a body.
 */
function returnTypeStart(code, from, limit) {
  let j = from;
  while (j >= 0 && limit - j < 300) {
    const c = code[j];
    if (c === ')') {
      const between = code.slice(j + 1, limit).trim();
      return between === '' || between.startsWith(':') ? j : -1;
    }
    if (c === '}' || c === ']' || (c === '>' && code[j - 1] !== '=')) {
      // a type literal, tuple or generic in the return type: skip it whole
      const opener = openerOf(code, j, c === '}' ? '{' : c === ']' ? '[' : '<', c);
      if (opener < 0) return -1;
      j = opener - 1;
      continue;
    }
    if (c === ';' || c === '{' || c === '=') return -1;
    j--;
  }
  return -1;
}

/** An arrow function's name: the binding or property it is assigned to, else the line it starts on. */
function arrow(code, arrowAt) {
  let k = arrowAt - 1;
  while (k >= 0 && /\s/.test(code[k])) k--;
  // skip the parameters (and a return type after them) or the single parameter
  const typed = code[k] === ')' ? k : returnTypeStart(code, k, arrowAt);
  if (typed >= 0) k = openerOf(code, typed, '(', ')') - 1;
  else while (k >= 0 && /[\w$]/.test(code[k])) k--;
  const before = code.slice(Math.max(0, k - 200), k + 1);
  const bound = /([A-Za-z_$][\w$]*)\s*(?::[^=;]*)?(?:=|:)\s*(?:async\s*)?(?:<[^>]*>)?\s*$/.exec(before);
  const start = bound ? k - before.length + 1 + bound.index : k + 1;
  return { kind: 'function', name: bound ? bound[1] : '(arrow)', start };
}

/** Every class and function in one file with its line count. */
export function sizes(src) {
  const code = blank(src);
  const lineAt = [];
  let line = 1;
  for (let k = 0; k < code.length; k++) { lineAt.push(line); if (code[k] === '\n') line++; }
  const stack = [];
  const found = [];
  for (let k = 0; k < code.length; k++) {
    if (code[k] === '{') stack.push({ at: k, what: classify(code, k) });
    else if (code[k] === '}') {
      const top = stack.pop();
      if (top?.what) {
        const first = lineAt[top.what.start] ?? lineAt[top.at];
        found.push({ ...top.what, line: first, lines: lineAt[k] - first + 1 });
      }
    }
  }
  return found;
}

function files(dir, out = []) {
  if (!statSync(dir).isDirectory()) return [dir];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) files(p, out);
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  process.stdout.on('error', () => undefined); // a reader that stops early (head) is not an error
  const over = [];
  for (const file of files(folder)) {
    for (const s of sizes(readFileSync(file, 'utf8'))) {
      const limit = s.kind === 'class' ? classLimit : functionLimit;
      if (all || s.lines > limit) over.push({ ...s, file: relative(root, file) });
    }
  }
  over.sort((a, b) => (a.kind === b.kind ? b.lines - a.lines : a.kind === 'class' ? -1 : 1));
  for (const s of over) process.stdout.write(`${s.kind.padEnd(8)} ${String(s.lines).padStart(5)}  ${s.name}  ${s.file}:${s.line}\n`);
  if (!all) {
    process.stdout.write(over.length === 0
      ? `no class over ${classLimit} lines, no function over ${functionLimit}\n`
      : `${over.length} over the limits (classes ${classLimit} lines, functions ${functionLimit})\n`);
    process.exitCode = over.length === 0 ? 0 : 1;
  }
}
