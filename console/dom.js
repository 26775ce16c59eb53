// Building the page from data: every text from the server goes in as a text node (never as HTML).

/** An element with attributes (`on*` functions become listeners) and children (strings become text). */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') e.addEventListener(k.slice(2), v);
    else if (k === 'text') e.textContent = String(v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  append(e, children);
  return e;
}

function append(e, children) {
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

/** A table with a caption, header cells and rows of cells (text or nodes). */
export function table(caption, head, rows) {
  return el('table', {},
    el('caption', {}, caption),
    el('thead', {}, el('tr', {}, head.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c) => el('td', {}, c))))));
}

/** Says something in the status line (read out by screen readers); `error` marks a failure. */
export function say(text, error = false) {
  const s = document.getElementById('status');
  s.textContent = text;
  s.className = error ? 'error' : '';
}

export function bytes(n) {
  if (n === undefined) return '';
  const units = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}
