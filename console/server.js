// Server: GET /v2/nereid/server (Nereid's own, in the logging category of the restricted API): version,
// uptime, memory, the flags in effect, refusals by the limits, and the latest warnings and errors of the log.
import { get } from './api.js';
import { bytes, el, say, table } from './dom.js';

export function serverView(main) {
  const box = el('div', { id: 'server' });
  main.append(el('h2', {}, 'Server'), el('button', { type: 'button', onclick: () => show(box) }, 'Refresh'), box);
  void show(box);
  return {};
}

function uptime(secs) {
  const d = Math.floor(secs / 86400);
  const h = Math.floor((secs % 86400) / 3600);
  const m = Math.floor((secs % 3600) / 60);
  return `${d > 0 ? `${d} d ` : ''}${h} h ${m} min ${secs % 60} s`;
}

async function show(box) {
  let s;
  try {
    s = await get('/v2/nereid/server');
  } catch (e) {
    box.replaceChildren(el('p', { class: 'error' }, `The server's state was refused: ${e.message}`));
    return;
  }
  const mem = s.nereid_memory_bytes;
  const refusals = Object.entries(s.nereid_limit_refusals);
  const log = s.nereid_recent_log;
  box.replaceChildren(
    table('Server', ['Name', 'Version', 'Node.js', 'Uptime', 'Extensions'], [[s.name, s.version, s.nereid_node_version, uptime(s.nereid_uptime_secs), s.extensions.join(', ')]]),
    table('Memory of the process', ['Resident', 'JS heap used', 'JS heap total', 'External', 'Array buffers'], [[bytes(mem.rss), bytes(mem.heap_used), bytes(mem.heap_total), bytes(mem.external), bytes(mem.array_buffers)]]),
    refusals.length === 0 ? el('p', {}, 'No request has been refused by a limit.') : table('Refusals by limit', ['Limit', 'Refusals'], refusals.map(([k, n]) => [k, String(n)])),
    flags(s.nereid_flags),
    log.length === 0 ? el('p', {}, 'No warning or error logged.') : table(`Latest warnings and errors (${log.length})`, ['Time', 'Level', 'Message'], log.slice().reverse().map((r) => [r.at, r.level, el('span', { class: 'logline' }, r.message)])),
  );
  say('');
}

/** The flags given, then the defaults of the others, folded. */
function flags(list) {
  if (list.length === 0) return el('p', {}, 'Started in process: no flags.');
  const given = list.filter((f) => f.given);
  const rest = list.filter((f) => !f.given);
  return el('div', {},
    table(`Flags given (${given.length})`, ['Flag', 'Value'], given.map((f) => [`--${f.name}`, f.value])),
    el('details', {}, el('summary', {}, `Defaults of the other ${rest.length} flags`),
      table('Flags at their defaults', ['Flag', 'Default'], rest.map((f) => [`--${f.name}`, f.value]))));
}
