// The console's shell: one view at a time, chosen by the address's #fragment, so the back button and links work.
import { access } from './api.js';
import { say } from './dom.js';
import { modelsView } from './models.js';
import { trafficView } from './traffic.js';
import { tryView } from './try.js';
import { serverView } from './server.js';
import { tracesView } from './traces.js';

const VIEWS = { models: modelsView, traffic: trafficView, try: tryView, traces: tracesView, server: serverView };

/** The view showing now: stop() ends its timers before the next one starts. */
let current = null;

function show() {
  const name = location.hash.slice(1).split('/')[0] || 'models';
  const view = VIEWS[name] ?? VIEWS.models;
  current?.stop?.();
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.view === name) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const main = document.getElementById('view');
  main.replaceChildren();
  say('');
  current = view(main, argument());
}

/** What follows the view's name in the fragment (a model's name), decoded; a malformed escape is kept as typed. */
function argument() {
  const raw = location.hash.slice(1).split('/').slice(1).join('/');
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

function bindAccess() {
  for (const [id, field] of [['access-header', 'header'], ['access-value', 'value'], ['access-key', 'key']]) {
    document.getElementById(id).addEventListener('input', (e) => { access[field] = e.target.value.trim(); });
  }
}

bindAccess();
window.addEventListener('hashchange', show);
show();
